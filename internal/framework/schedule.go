package framework

import (
	"time"

	"github.com/robfig/cron/v3"
)

// ParseSchedule reads a schedule as Kubernetes' CronJob does: five fields
// (minute, hour, day of month, month, day of week) or a descriptor
// (@daily, @every 6h), in UTC.
func ParseSchedule(spec string) (cron.Schedule, error) {
	return cronParser.Parse(spec)
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// DueRun returns the latest run of sched after last that has come by now
// (zero when none has) and the run after now. Runs missed while the
// operator was down are not made up: only the latest is due, as a CronJob
// takes one. A controller records the due run as taken (its last), so it
// is never taken twice.
func DueRun(sched cron.Schedule, last, now time.Time) (due, next time.Time) {
	next = sched.Next(last)
	for !next.After(now) {
		due = next
		next = sched.Next(next)
	}
	return due, next
}
