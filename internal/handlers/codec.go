package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"matchmaker/internal/apperr"
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

// encode writes v as JSON with the given status. The body is built before the header is
// written, so an encoding failure still becomes a proper 500.
func encode(w http.ResponseWriter, status int, v any) error {
	buf := getBuffer()
	defer putBuffer(buf)
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// decode reads a JSON body into a T: the body must be application/json, hold exactly one
// JSON value, and name no field T does not have. Its errors are apperr errors that name the
// field at fault by its JSON path.
func decode[T any](r *http.Request) (T, error) {
	var v T
	if err := requireJSON(r); err != nil {
		return v, err
	}
	buf := getBuffer()
	defer putBuffer(buf)
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return v, &apperr.Error{Code: apperr.TooLarge,
				Message: fmt.Sprintf("the body is larger than %d bytes", tooBig.Limit),
				Fields:  []apperr.FieldError{{Field: "body", Message: fmt.Sprintf("must be at most %d bytes", tooBig.Limit)}}}
		}
		return v, &apperr.Error{Code: apperr.Invalid, Message: "the body could not be read", Err: err,
			Fields: []apperr.FieldError{{Field: "body", Message: "could not be read"}}}
	}
	data := buf.Bytes()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, decodeError(data, err, reflect.TypeFor[T]())
	}
	if _, err := dec.Token(); err != io.EOF {
		return v, apperr.Field("body", "must hold a single JSON value")
	}
	return v, nil
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

// decodeError turns an encoding/json error into an error naming the field by its JSON path.
// encoding/json reports neither array indices nor where an unknown field is, so the body is
// walked again (only on this error path) to find them.
func decodeError(data []byte, err error, t reflect.Type) error {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return apperr.Field("body", "must be a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.Field("body", "is truncated JSON")
	case errors.As(err, &syntax):
		return apperr.Field("body", "is malformed JSON at byte %d: %s", syntax.Offset, syntax.Error())
	case errors.As(err, &typeErr):
		path := locate(data, t, typeErr.Offset, "")
		if path == "" {
			path = "body"
		}
		return apperr.Field(path, "%s", typeMessage(typeErr))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		path := locate(data, t, -1, name)
		if path == "" {
			path = name
		}
		return apperr.Field(path, "is not a known field")
	}
	return apperr.Wrap(apperr.Invalid, err, "the body could not be decoded")
}

func typeMessage(e *json.UnmarshalTypeError) string {
	t := e.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		if strings.HasPrefix(e.Value, "number") {
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

// locate walks data as the value of Go type t and returns the JSON path of the first value
// whose end reaches offset (when offset >= 0) or of the first object key called unknown that
// t has no field for (when unknown != "").
func locate(data []byte, t reflect.Type, offset int64, unknown string) string {
	l := locator{dec: json.NewDecoder(bytes.NewReader(data)), offset: offset, unknown: unknown}
	l.dec.UseNumber()
	l.value(t, "")
	return l.found
}

type locator struct {
	dec     *json.Decoder
	offset  int64
	unknown string
	found   string
	done    bool
}

func (l *locator) token(path string) (json.Token, bool) {
	tok, err := l.dec.Token()
	if err != nil {
		l.done = true
		return nil, false
	}
	if l.offset >= 0 && l.dec.InputOffset() >= l.offset {
		l.found, l.done = path, true
		return nil, false
	}
	return tok, true
}

func (l *locator) value(t reflect.Type, path string) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, ok := l.token(path)
	if !ok {
		return
	}
	switch tok {
	case json.Delim('{'):
		for !l.done && l.dec.More() {
			keyTok, ok := l.token(path)
			if !ok {
				return
			}
			key, _ := keyTok.(string)
			child := join(path, key)
			var ft reflect.Type
			if t != nil && t.Kind() == reflect.Struct {
				f, known := fieldByJSONName(t, key)
				if !known && l.unknown != "" && key == l.unknown {
					l.found, l.done = child, true
					return
				}
				ft = f
			} else if t != nil && t.Kind() == reflect.Map {
				ft = t.Elem()
			}
			l.value(ft, child)
		}
		if !l.done {
			l.token(path) // '}'
		}
	case json.Delim('['):
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; !l.done && l.dec.More(); i++ {
			l.value(et, path+"["+strconv.Itoa(i)+"]")
		}
		if !l.done {
			l.token(path) // ']'
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldByJSONName finds the struct field that encoding/json would fill from key.
func fieldByJSONName(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if strings.EqualFold(name, key) {
			return f.Type, true
		}
	}
	return nil, false
}
