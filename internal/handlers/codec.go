package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
)

// bufferPool recycles request and response buffers: the matchmaking endpoint reads and writes
// megabytes, and a fresh buffer per request is most of its garbage.
var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer keeps a single huge request from pinning its buffer in the pool forever.
const maxPooledBuffer = 1 << 20

func getBuffer() *bytes.Buffer {
	b := bufferPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuffer {
		bufferPool.Put(b)
	}
}

// writeJSON writes an already encoded JSON body with the given status.
func writeJSON(w http.ResponseWriter, status int, body []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

// respond writes v as JSON with the given status. A value that cannot be encoded is a bug:
// it is logged and answered with a 500 problem (nothing was written yet). A failed write is a
// client that went away, logged at debug level only.
func respond(w http.ResponseWriter, r *http.Request, logger *slog.Logger, status int, v any) {
	buf := getBuffer()
	defer putBuffer(buf)
	if err := encodeResponse(buf, v); err != nil {
		writeError(w, r, logger, apperr.Wrap(apperr.Internal, err, "encode response"))
		return
	}
	if err := writeJSON(w, status, buf.Bytes()); err != nil {
		logger.DebugContext(r.Context(), "write response", "err", err, "request_id", requestIDFrom(r.Context()))
	}
}

// encodeResponse writes v into buf as json.Encoder's Encode does: by its own appendJSON when
// it has one (respond_encode.go), else by encoding/json, which also has the last word on a
// value the appender cannot write (nothing of it is in buf then).
func encodeResponse(buf *bytes.Buffer, v any) error {
	if a, ok := v.(jsonAppender); ok {
		if b, err := a.appendJSON(buf.AvailableBuffer()); err == nil {
			buf.Write(append(b, '\n'))
			return nil
		}
	}
	return json.NewEncoder(buf).Encode(v)
}

// decode reads a JSON body into a T: the body must be application/json, hold exactly one
// JSON value, name no member T does not have and no member twice. Its errors are apperr
// errors that name the field at fault by its JSON path ("players[3].rating").
//
// Requests are decoded with github.com/go-json-experiment/json (the prototype of Go's
// encoding/json/v2): it decodes our bodies faster than encoding/json, is strict
// where we want strictness (case-sensitive names, duplicate names and invalid UTF-8
// rejected), and its errors carry the JSON Pointer of the bad value.
func decode[T any](r *http.Request) (T, error) {
	var v T
	if err := requireJSON(r); err != nil {
		return v, err
	}
	buf := getBuffer()
	defer putBuffer(buf)
	data, err := readRequestBody(r, buf)
	if err != nil {
		return v, err
	}
	if err := jsonv2.Unmarshal(data, &v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return v, decodeError(len(data), err)
	}
	return v, nil
}

// readRequestBody is r's body: the bytes admission read (admittedBody) as they are, else
// read into buf.
func readRequestBody(r *http.Request, buf *bytes.Buffer) ([]byte, error) {
	if body, ok := r.Body.(*admittedBody); ok {
		return body.take(), nil
	}
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &apperr.Error{Code: apperr.TooLarge,
				Message: fmt.Sprintf("the body is larger than %d bytes", tooBig.Limit),
				Fields:  []apperr.FieldError{{Field: "body", Message: fmt.Sprintf("must be at most %d bytes", tooBig.Limit)}}}
		}
		return nil, &apperr.Error{Code: apperr.Invalid, Message: "the body could not be read", Err: err,
			Fields: []apperr.FieldError{{Field: "body", Message: "could not be read"}}}
	}
	return buf.Bytes(), nil
}

func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mediaType, _, err := mime.ParseMediaType(ct)
	if err == nil && (mediaType == "application/json" || strings.HasSuffix(mediaType, "+json")) {
		return nil
	}
	return &apperr.Error{Code: apperr.Unsupported, Message: "the body must be application/json",
		Fields: []apperr.FieldError{{Field: "Content-Type", Message: "must be application/json"}}}
}

// decodeError turns a decoding error into an Invalid error naming the field.
func decodeError(size int, err error) error {
	var semantic *jsonv2.SemanticError
	var syntactic *jsontext.SyntacticError
	switch {
	case errors.As(err, &semantic):
		field := fieldPath(semantic.JSONPointer)
		if field == "" {
			field = "body"
		}
		if errors.Is(semantic.Err, jsonv2.ErrUnknownName) {
			return apperr.Field(field, "is not a known field")
		}
		return apperr.Field(field, "%s", typeMessage(semantic))
	case errors.As(err, &syntactic):
		if errors.Is(syntactic.Err, jsontext.ErrDuplicateName) {
			return apperr.Field(fieldPath(syntactic.JSONPointer), "is given more than once")
		}
		if size == 0 {
			return apperr.Field("body", "must be a JSON object")
		}
		if errors.Is(syntactic.Err, io.ErrUnexpectedEOF) {
			return apperr.Field("body", "is truncated JSON")
		}
		return apperr.Field("body", "is malformed JSON at byte %d: %v", syntactic.ByteOffset, syntactic.Err)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return apperr.Field("body", "must be a JSON object")
	}
	return apperr.Wrap(apperr.Invalid, err, "the body could not be decoded")
}

// fieldPath turns a JSON Pointer ("/players/3/rating") into the field path the API's errors
// use ("players[3].rating"). No request type has an object member named by digits alone, so
// a segment of digits is an array index.
func fieldPath(pointer jsontext.Pointer) string {
	var b strings.Builder
	for token := range pointer.Tokens() {
		if token != "" && strings.Trim(token, "0123456789") == "" {
			b.WriteString("[" + token + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(token)
	}
	return b.String()
}

// optionalNumber is a JSON number that may be absent or null. It decodes without the
// allocation a *float64 costs, which matters for a 100,000-player queue of ratings.
type optionalNumber struct {
	Value float64
	Set   bool
}

// UnmarshalJSONFrom implements json (v2)'s UnmarshalerFrom.
func (o *optionalNumber) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case 'n':
		*o = optionalNumber{}
		return nil
	case '0':
		v, err := tok.Float()
		if err != nil {
			return &jsonv2.SemanticError{JSONKind: '0', Err: err}
		}
		*o = optionalNumber{Value: v, Set: true}
		return nil
	}
	return &jsonv2.SemanticError{JSONKind: tok.Kind()}
}

// MarshalJSON lets the request be re-encoded (for hashing) by encoding/json.
func (o optionalNumber) MarshalJSON() ([]byte, error) {
	if !o.Set {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

func typeMessage(e *jsonv2.SemanticError) string {
	t := e.GoType
	if t == reflect.TypeFor[optionalNumber]() {
		t = reflect.TypeFor[float64]()
	}
	if t == reflect.TypeFor[rulesjson.Value]() {
		return "must be a string, a number or a list of strings"
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "has the wrong type"
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		if e.JSONKind == '0' {
			return "must be a finite number"
		}
		return "must be a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "must be an integer in range"
	case reflect.String:
		return "must be a string"
	case reflect.Bool:
		return "must be a boolean"
	case reflect.Slice, reflect.Array:
		return "must be an array"
	case reflect.Struct, reflect.Map:
		return "must be an object"
	}
	return "has the wrong type"
}
