// Command runc-wrapper stands between containerd and runc on machines whose
// kernel refuses a negative oom_score_adj (some VMs do). The kubelet asks for
// -998 on pod sandboxes; runc would then fail with "failed to update
// /proc/self/oom_score_adj: Permission denied". For `create` and `run`, the
// wrapper rewrites a negative process.oomScoreAdj in the bundle's
// config.json to 0 and then execs the runc binary next to itself with the
// same arguments. Every other call passes straight through.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

func main() {
	if err := fixBundle(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "runc-wrapper: %v\n", err)
		os.Exit(1)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "runc-wrapper: %v\n", err)
		os.Exit(1)
	}
	runc := filepath.Join(filepath.Dir(self), "runc")
	err = syscall.Exec(runc, append([]string{runc}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "runc-wrapper: exec %s: %v\n", runc, err)
	os.Exit(1)
}

// fixBundle clamps the bundle's oomScoreAdj when args create or run a
// container.
func fixBundle(args []string) error {
	command, bundle := parse(args)
	if command != "create" && command != "run" {
		return nil
	}
	path := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fixed, changed, err := clampOOMScoreAdj(data)
	if err != nil || !changed {
		return err
	}
	return os.WriteFile(path, fixed, 0o600)
}

// parse finds runc's subcommand and the bundle directory (--bundle or -b,
// else the working directory, as runc itself defaults).
func parse(args []string) (command, bundle string) {
	bundle = "."
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case command == "" && a != "" && a[0] != '-':
			command = a
		case a == "--bundle" || a == "-b":
			if i+1 < len(args) {
				bundle = args[i+1]
				i++
			}
		case len(a) > 9 && a[:9] == "--bundle=":
			bundle = a[9:]
		case command == "" && (a == "--root" || a == "--log" || a == "--log-format" || a == "--criu"):
			i++ // global flags that take a value
		}
	}
	return command, bundle
}

// clampOOMScoreAdj sets a negative process.oomScoreAdj of an OCI runtime
// spec to 0, keeping every other field as it was.
func clampOOMScoreAdj(data []byte) ([]byte, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var spec map[string]any
	if err := dec.Decode(&spec); err != nil {
		return nil, false, fmt.Errorf("parse config.json: %w", err)
	}
	process, _ := spec["process"].(map[string]any)
	adj, ok := process["oomScoreAdj"].(json.Number)
	if !ok {
		return data, false, nil
	}
	if n, err := adj.Int64(); err != nil || n >= 0 {
		return data, false, err
	}
	process["oomScoreAdj"] = 0
	out, err := json.Marshal(spec)
	return out, true, err
}
