package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/matrixorigin/matrixone/pkg/logservice"
	pb "github.com/matrixorigin/matrixone/pkg/pb/logservice"
	"github.com/matrixorigin/matrixone/pkg/pb/metadata"
)

// cnLabels serves PUT /v1/cn/{uuid}/labels (wire.CNLabelsPath): it sets
// the CN's labels in HAKeeper, which the proxies route sessions by, through
// the probe's HAKeeper client. HAKeeper replaces the CN's labels with the
// ones given, all keys at once (mo_ctl's label command sets one key).
type cnLabels struct {
	probe   *probe
	timeout time.Duration
}

func (h *cnLabels) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		http.Error(w, "only PUT", http.StatusMethodNotAllowed)
		return
	}
	uuid := r.PathValue("uuid")
	var labels map[string][]string
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&labels); err != nil {
		http.Error(w, "a JSON object of each label's values: "+err.Error(), http.StatusBadRequest)
		return
	}
	update := pb.CNStoreLabel{UUID: uuid, Labels: map[string]metadata.LabelList{}}
	for k, v := range labels {
		update.Labels[k] = metadata.LabelList{Labels: v}
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	err := h.probe.call(ctx, func(c logservice.ClusterHAKeeperClient) error {
		// The client NewLogHAKeeperClient makes serves every HAKeeper
		// call; the interface it is typed by lists the log store's.
		proxy, ok := c.(logservice.ProxyHAKeeperClient)
		if !ok {
			return fmt.Errorf("the HAKeeper client %T cannot update CN labels", c)
		}
		return proxy.UpdateCNLabel(ctx, update)
	})
	if err != nil {
		slog.Info("Setting a CN's labels failed", "cn", uuid, "labels", labels, "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	slog.Info("Set a CN's labels", "cn", uuid, "labels", labels)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]bool{"ok": true})
}
