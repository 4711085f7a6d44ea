package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
)

// gpssJobs is a client of GPSS's job API, as gpsscli is: `gpss -server
// ADDR submit|start|stop NAME...` acts on the named jobs, `gpss -server
// ADDR list` prints "NAME STATUS" per job, sorted. `gpss serving JOB
// ADDR...` asks each gpfdist address for the job, as a Greenplum segment
// does, and prints how many serve it; `gpss -server ADDR placement
// ADDR...` prints "NAME STATUS SERVING" for every job, SERVING being how
// many of the gpfdist addresses serve it.
func gpssJobs(ctx context.Context, server string, args []string) {
	if len(args) == 0 {
		fail("usage: smoke gpss -server ADDR submit|start|stop|list [NAME...] | gpss serving JOB ADDR... | gpss -server ADDR placement ADDR...")
	}
	if args[0] == "serving" {
		fmt.Println(serving(ctx, args[1], args[2:]))
		return
	}
	conn, err := grpc.NewClient(server, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail("gpss %s: %v", server, err)
	}
	defer conn.Close()
	c := job.NewJobServiceClient(conn)
	byName := func(name string) *job.JobIdentifier {
		return &job.JobIdentifier{Unit: &job.JobIdentifier_JobName{JobName: name}}
	}
	if args[0] == "placement" {
		placement(ctx, c, args[1:])
		return
	}
	for _, name := range args[1:] {
		var err error
		switch args[0] {
		case "submit":
			_, err = c.SubmitJob(ctx, &job.SubmitJobRequest{JobOption: &job.JobOption{Name: name},
				Target: &job.Target{Unit: &job.Target_Gpdb{Gpdb: &job.GPDBTarget{Host: "greenplum", Port: 5432, Database: "e2e", Table: name}}}})
		case "start":
			_, err = c.StartJob(ctx, &job.StartJobRequest{JobIdentifier: byName(name)})
		case "stop":
			_, err = c.StopJob(ctx, &job.StopJobRequest{JobIdentifier: byName(name)})
		default:
			fail("unknown gpss command %q", args[0])
		}
		if err != nil {
			fail("%s %s: %v", args[0], name, err)
		}
	}
	if args[0] != "list" {
		return
	}
	for _, info := range listJobs(ctx, c) {
		fmt.Println(info.GetName(), info.GetStatus().GetCode())
	}
}

// listJobs is every job, by name.
func listJobs(ctx context.Context, c job.JobServiceClient) []*job.JobInfo {
	resp, err := c.ListJobs(ctx, &job.ListJobRequest{})
	if err != nil {
		fail("list: %v", err)
	}
	infos := resp.GetJobInfos()
	sort.Slice(infos, func(i, j int) bool { return infos[i].GetName() < infos[j].GetName() })
	return infos
}

// placement prints every job's name and status and how many of the
// gpfdist addresses serve it: one call for a check of every job.
func placement(ctx context.Context, c job.JobServiceClient, addrs []string) {
	for _, info := range listJobs(ctx, c) {
		fmt.Println(info.GetName(), info.GetStatus().GetCode(), serving(ctx, info.GetName(), addrs))
	}
}

// serving is how many of the gpfdist addresses answer a GET of the job
// with 200 (gpfdist's protocol: X-GP-PROTO set).
func serving(ctx context.Context, jobName string, addrs []string) int {
	n := 0
	for _, addr := range addrs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/"+jobName, http.NoBody)
		if err != nil {
			fail("%v", err)
		}
		req.Header.Set("X-GP-PROTO", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fail("gpfdist %s: %v", addr, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			n++
		}
	}
	return n
}
