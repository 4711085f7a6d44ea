package hakeeper

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+Path, http.NoBody)
	if err != nil {
		return View{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return View{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return View{}, fmt.Errorf("read the view: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return View{}, &StatusError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(body[:min(len(body), 256)]))}
	}
	var v View
	if err := json.Unmarshal(body, &v); err != nil {
		return View{}, fmt.Errorf("decode the view: %w", err)
	}
	return v, nil
}
