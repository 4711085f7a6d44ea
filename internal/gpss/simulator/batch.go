package simulator

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/stewardhq/steward/internal/gpss/gpssapi/batch"
)

// session is a Batch Data API session: the table it writes to and the rows
// it wrote. The simulator has no Greenplum behind it: rows are counted, not
// stored.
type session struct {
	table string
	rows  int64
}

// batchService is GPSS's Batch Data API on one instance; sessions live in
// the instance that opened them, as in GPSS.
type batchService struct {
	batch.UnimplementedGpssServer
	s *Server
}

func (b *batchService) Connect(_ context.Context, req *batch.ConnectRequest) (*batch.Session, error) {
	if req.GetHost() == "" || req.GetDB() == "" {
		return nil, status.Error(codes.InvalidArgument, "Host and DB are required")
	}
	id := newID()
	b.s.mu.Lock()
	b.s.sessions[id] = &session{}
	b.s.mu.Unlock()
	return &batch.Session{ID: id}, nil
}

func (b *batchService) Disconnect(_ context.Context, req *batch.Session) (*emptypb.Empty, error) {
	b.s.mu.Lock()
	delete(b.s.sessions, req.GetID())
	b.s.mu.Unlock()
	return &emptypb.Empty{}, nil
}

func (b *batchService) Open(_ context.Context, req *batch.OpenRequest) (*emptypb.Empty, error) {
	if req.GetTableName() == "" {
		return nil, status.Error(codes.InvalidArgument, "TableName is required")
	}
	return &emptypb.Empty{}, b.with(req.GetSession(), func(s *session) error {
		s.table, s.rows = req.GetSchemaName()+"."+req.GetTableName(), 0
		return nil
	})
}

func (b *batchService) Write(_ context.Context, req *batch.WriteRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, b.with(req.GetSession(), func(s *session) error {
		if s.table == "" {
			return status.Error(codes.FailedPrecondition, "no table open")
		}
		s.rows += int64(len(req.GetRows()))
		return nil
	})
}

func (b *batchService) Close(_ context.Context, req *batch.CloseRequest) (*batch.TransferStats, error) {
	var stats batch.TransferStats
	err := b.with(req.GetSession(), func(s *session) error {
		if s.table == "" {
			return status.Error(codes.FailedPrecondition, "no table open")
		}
		stats.SuccessCount, s.table, s.rows = s.rows, "", 0
		return nil
	})
	return &stats, err
}

func (b *batchService) with(sess *batch.Session, fn func(*session) error) error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	s, ok := b.s.sessions[sess.GetID()]
	if !ok {
		return status.Errorf(codes.NotFound, "no session %q", sess.GetID())
	}
	return fn(s)
}
