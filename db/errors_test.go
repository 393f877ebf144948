package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

func TestMapError(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("query: %w", &pgconn.PgError{Code: code, Message: "m"}) }
	domain := apperr.New(apperr.Invalid, "bad")
	for _, tc := range []struct {
		err  error
		want apperr.Code
	}{
		{pgx.ErrNoRows, apperr.NotFound},
		{pg("23505"), apperr.Conflict},
		{pg("40001"), apperr.Unavailable},
		{pg("40P01"), apperr.Unavailable},
		{pg("08006"), apperr.Unavailable},
		{pg("53300"), apperr.Unavailable}, // too many connections
		{pg("57P01"), apperr.Unavailable}, // admin shutdown
		{pg("3D000"), apperr.Unavailable}, // no such database
		{pg("57014"), apperr.Unavailable}, // statement timeout
		{pg("25006"), apperr.Unavailable}, // read-only transaction: a standby
		{pg("22P02"), apperr.Internal},    // a malformed value: our bug
		{pg("23514"), apperr.Internal},    // a CHECK: our bug too
		{context.Canceled, apperr.Unavailable},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), apperr.Unavailable},
		{puddle.ErrClosedPool, apperr.Unavailable},
		{pgconn.ErrConnClosed, apperr.Unavailable},
		{io.ErrUnexpectedEOF, apperr.Unavailable},
		{&pgconn.ConnectError{}, apperr.Unavailable},
		{errors.New("something else"), apperr.Internal},
		{domain, apperr.Invalid},
	} {
		got := MapError(tc.err, "test")
		if code := apperr.CodeOf(got); code != tc.want {
			t.Errorf("MapError(%v) = %v (%s), want %s", tc.err, got, code, tc.want)
		}
		if !errors.Is(got, tc.err) && !errors.Is(tc.err, got) {
			t.Errorf("MapError(%v) lost its cause: %v", tc.err, got)
		}
	}
	for code, says := range map[string]string{"3D000": "does not exist", "28P01": "user or password", "57P03": "cannot be reached", "25006": "target_session_attrs"} {
		if msg := MapError(pg(code), "open").Error(); !strings.Contains(msg, says) {
			t.Errorf("SQLSTATE %s says %q, want it to say %q", code, msg, says)
		}
	}
	if msg := MapError(fmt.Errorf("acquiring a connection: %w", context.DeadlineExceeded), "purge").Error(); !strings.Contains(msg, "deadline") || strings.Contains(msg, "cannot be reached") {
		t.Errorf("a deadline says %q: it should name the deadline, not an unreachable database", msg)
	}
	if MapError(nil, "x") != nil {
		t.Fatal("MapError(nil) != nil")
	}
	if !Retryable(&pgconn.PgError{Code: "40P01"}) || !Retryable(&pgconn.PgError{Code: "23505", ConstraintName: "matches_pkey"}) ||
		Retryable(&pgconn.PgError{Code: "23505", ConstraintName: "other"}) || Retryable(errors.New("x")) {
		t.Fatal("Retryable misjudges")
	}
}
