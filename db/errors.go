package db

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// MapError turns an error from pgx or Postgres into the domain's: what says what the store was
// doing, for the message. pgx.ErrNoRows is NotFound, a unique violation Conflict, a connection
// that cannot be had or is lost (and a context that ends first) Unavailable, anything else
// Internal with the cause kept for the logs. Errors that already are apperr errors pass
// unchanged.
func MapError(err error, what string) error {
	if err == nil {
		return nil
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return err
	}
	msg := "db: " + what
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.Wrap(apperr.NotFound, err, msg+": not found")
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return apperr.Wrap(apperr.Conflict, err, msg+": already exists")
		case "40001", "40P01": // serialization_failure, deadlock_detected (after our retries)
			return apperr.Wrap(apperr.Unavailable, err, msg+": the database is too busy, try again")
		case "57014": // query_canceled (statement_timeout, or our cancel request)
			return apperr.Wrap(apperr.Unavailable, err, msg+": the database did not answer in time")
		case "3D000": // invalid_catalog_name
			return apperr.Wrap(apperr.Unavailable, err, msg+": the database named in DATABASE_URL does not exist (create it first)")
		case "28000", "28P01": // invalid_authorization_specification, invalid_password
			return apperr.Wrap(apperr.Unavailable, err, msg+": the database refused DATABASE_URL's user or password")
		case "57P01", "57P02", "57P03": // shutting down, crashed, cannot connect now
			return apperr.Wrap(apperr.Unavailable, err, msg+": the database cannot be reached")
		case "25006": // read_only_sql_transaction: a standby, or a primary being demoted
			return apperr.Wrap(apperr.Unavailable, err, msg+": the database takes no writes (a standby): is target_session_attrs=read-write in DATABASE_URL?")
		}
		switch pe.Code[:2] {
		case "08", "53", "58": // connection exception, insufficient resources, system error
			return apperr.Wrap(apperr.Unavailable, err, msg+": the database cannot be reached")
		}
		return apperr.Wrap(apperr.Internal, err, msg)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// Often a wait for one of the pool's connections, or a statement that ran long: the
		// database may well be up.
		return apperr.Wrap(apperr.Unavailable, err, msg+": no answer within the call's deadline")
	}
	if unreachable(err) {
		return apperr.Wrap(apperr.Unavailable, err, msg+": the database cannot be reached")
	}
	return apperr.Wrap(apperr.Internal, err, msg)
}

// unreachable reports errors that come from not having a working connection: the pool is
// closed, connecting failed, the connection broke or timed out, or the caller gave up waiting.
func unreachable(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.Timeout(err) ||
		errors.Is(err, puddle.ErrClosedPool) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Retryable reports errors after which the whole transaction may simply be run again: a
// serialization failure, a deadlock, or two results' inserts of the same new row.
func Retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01":
			return true
		case "23505":
			// Two transactions inserted the same new match id, or the same newcomer's rating
			// row, at once. Run again: the loser finds the winner's match and replays or
			// conflicts as it should, or finds the row and locks it.
			return pe.ConstraintName == "matches_pkey" || pe.ConstraintName == "ratings_pkey"
		}
	}
	return false
}
