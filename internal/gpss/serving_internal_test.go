package gpss

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
)

func TestJobsStatus(t *testing.T) {
	now := time.Now()
	answer := func(at time.Time, codes map[string]job.JobStatusCode) probe.Result[instanceAnswer] {
		return probe.Result[instanceAnswer]{Value: instanceAnswer{codes: codes}, At: at, ValueAt: at}
	}
	many := map[string]job.JobStatusCode{}
	for i := range 12 {
		many[fmt.Sprintf("j%02d", i)] = job.JobStatusCode_JOB_ERROR
	}
	old := answer(now.Add(-time.Minute), map[string]job.JobStatusCode{"a": job.JobStatusCode_JOB_RUNNING})
	fresh := answer(now.Add(-time.Second), map[string]job.JobStatusCode{
		"a": job.JobStatusCode_JOB_ERROR, "b": job.JobStatusCode_JOB_RUNNING, "c": job.JobStatusCode_JOB_STOPPED})
	failing := probe.Result[instanceAnswer]{Err: fmt.Errorf("refused"), At: now}

	if st := jobsStatus(map[int]probe.Result[instanceAnswer]{0: old, 1: failing}, now); st != nil {
		t.Errorf("no answer within %s: %+v, want none", servingMaxAge, st)
	}
	st := jobsStatus(map[int]probe.Result[instanceAnswer]{0: old, 1: fresh, 2: failing}, now)
	if st == nil || st.Running != 1 || st.Stopped != 1 || st.Error != 1 || !slices.Equal(st.InError, []string{"a"}) {
		t.Errorf("the freshest answer: %+v, want 1 running, 1 stopped, a in error", st)
	}
	st = jobsStatus(map[int]probe.Result[instanceAnswer]{0: answer(now, many)}, now)
	if st == nil || st.Error != 12 || len(st.InError) != maxJobsInError || st.InError[0] != "j00" {
		t.Errorf("12 in error: %+v, want the count and the first %d names", st, maxJobsInError)
	}
}
