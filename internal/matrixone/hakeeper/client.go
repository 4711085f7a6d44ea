package hakeeper

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// Path is where mo-agent serves the view.
const Path = "/v1/cluster"

// StatusError is an answer other than 200: mo-agent answers 503 with
// HAKeeper's error while it cannot reach HAKeeper (not bootstrapped yet, or
// no log store up).
type StatusError struct {
	StatusCode int
	// Body is the start of the answer.
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("mo-agent answered HTTP %d: %s", e.StatusCode, e.Body)
}

// Get asks the mo-agent at baseURL (http://host:port) for the view. It
// honors ctx's deadline.
func Get(ctx context.Context, client *http.Client, baseURL string) (View, error) {
	var v View
	err := call(ctx, client, http.MethodGet, baseURL, Path, nil, &v)
	return v, err
}

// StartLockRestart has the mo-agent at baseURL announce the restart of the
// CN uuid to the TN's lock table allocator, which then moves the CN's lock
// tables to other CNs as its transactions end (wire.LockRestartPath).
func StartLockRestart(ctx context.Context, client *http.Client, baseURL, uuid string) error {
	return call(ctx, client, http.MethodPost, baseURL, cnPath(wire.LockRestartPath, uuid), nil, nil)
}

// LockRestartStatus asks the mo-agent at baseURL whether the CN uuid, whose
// restart was announced, may stop.
func LockRestartStatus(ctx context.Context, client *http.Client, baseURL, uuid string) (wire.LockRestart, error) {
	var r wire.LockRestart
	err := call(ctx, client, http.MethodGet, baseURL, cnPath(wire.LockRestartPath, uuid), nil, &r)
	return r, err
}

// SetCNLabels has the mo-agent at baseURL set the labels of the CN uuid in
// HAKeeper, replacing the ones it had (wire.CNLabelsPath).
func SetCNLabels(ctx context.Context, client *http.Client, baseURL, uuid string, labels map[string][]string) error {
	return call(ctx, client, http.MethodPut, baseURL, cnPath(wire.CNLabelsPath, uuid), labels, nil)
}

// cnPath is path with the CN uuid in it.
func cnPath(path, uuid string) string {
	return strings.Replace(path, "{uuid}", url.PathEscape(uuid), 1)
}

// call sends method to the mo-agent at baseURL's path, with in as its JSON
// body (nil: none), and decodes its JSON answer into out (nil: ignored).
func call(ctx context.Context, client *http.Client, method, baseURL, path string, in, out any) error {
	var reqBody io.Reader = http.NoBody
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		reqBody = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(baseURL, "/")+path, reqBody)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("read %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return &StatusError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(body[:min(len(body), 256)]))}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode %s %s: %w", method, path, err)
	}
	return nil
}
