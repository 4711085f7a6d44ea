package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/matrixorigin/matrixone/pkg/common/morpc"
	pb "github.com/matrixorigin/matrixone/pkg/pb/lock"
	"go.uber.org/zap"

	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// lockRestart serves MatrixOne's lock service restart handshake for a CN,
// which the TN's lock table allocator answers:
//
//	POST /v1/cn/{uuid}/restart  SetRestartService: the CN's lock tables are
//	                            to move to other CNs once its transactions end
//	GET  /v1/cn/{uuid}/restart  CanRestartService and RemainTxnInService, as
//	                            wire.LockRestart
//
// A CN that stops while it holds lock tables leaves every transaction that
// locks one of them waiting until the allocator gives up on it.
type lockRestart struct {
	probe   *probe
	timeout time.Duration

	mu     sync.Mutex
	client morpc.RPCClient
}

func (h *lockRestart) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	uuid := r.PathValue("uuid")
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	var answer any
	var err error
	switch r.Method {
	case http.MethodPost:
		var resp *pb.Response
		if resp, err = h.send(ctx, &pb.Request{Method: pb.Method_SetRestartService,
			SetRestartService: pb.SetRestartServiceRequest{ServiceID: uuid}}); err == nil {
			answer = map[string]bool{"ok": resp.SetRestartService.OK}
		}
	case http.MethodGet:
		answer, err = h.status(ctx, uuid)
	default:
		http.Error(w, "only GET and POST", http.StatusMethodNotAllowed)
		return
	}
	if err != nil {
		slog.Info("The lock service handshake failed", "cn", uuid, "method", r.Method, "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// status asks whether the CN uuid may stop now.
func (h *lockRestart) status(ctx context.Context, uuid string) (wire.LockRestart, error) {
	can, err := h.send(ctx, &pb.Request{Method: pb.Method_CanRestartService,
		CanRestartService: pb.CanRestartServiceRequest{ServiceID: uuid}})
	if err != nil {
		return wire.LockRestart{}, err
	}
	remain, err := h.send(ctx, &pb.Request{Method: pb.Method_RemainTxnInService,
		RemainTxnInService: pb.RemainTxnInServiceRequest{ServiceID: uuid}})
	if err != nil {
		return wire.LockRestart{}, err
	}
	return wire.LockRestart{CanRestart: can.CanRestartService.OK, RemainTxn: remain.RemainTxnInService.RemainTxn}, nil
}

// send sends req to the TN's lock table allocator, whose address HAKeeper
// gives.
func (h *lockRestart) send(ctx context.Context, req *pb.Request) (*pb.Response, error) {
	details, err := h.probe.details(ctx)
	if err != nil {
		return nil, err
	}
	var address string
	for _, tn := range details.TNStores {
		if tn.LockServiceAddress != "" {
			address = tn.LockServiceAddress
			break
		}
	}
	if address == "" {
		return nil, errors.New("HAKeeper knows no TN with a lock service")
	}
	client, err := h.rpc()
	if err != nil {
		return nil, err
	}
	f, err := client.Send(ctx, address, req)
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", req.Method, address, err)
	}
	defer f.Close()
	v, err := f.Get()
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", req.Method, address, err)
	}
	resp := v.(*pb.Response)
	if err := resp.UnwrapError(); err != nil {
		return nil, fmt.Errorf("%s to %s: %w", req.Method, address, err)
	}
	return resp, nil
}

// rpc returns the MatrixOne RPC client, made on first use.
func (h *lockRestart) rpc() (morpc.RPCClient, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client == nil {
		cfg := morpc.Config{}
		cfg.Adjust()
		c, err := cfg.NewClient("steward-lock", zap.NewNop(), func() morpc.Message { return &pb.Response{} })
		if err != nil {
			return nil, err
		}
		h.client = c
	}
	return h.client, nil
}
