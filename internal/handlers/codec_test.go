package handlers

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

type codecInner struct {
	Score *float64 `json:"score"`
	Tags  []string `json:"tags"`
}

type codecOuter struct {
	Name  string       `json:"name"`
	Items []codecInner `json:"items"`
	Grid  [][]int      `json:"grid"`
}

func TestDecodeNamesTheFieldByItsJSONPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body  string
		field string
	}{
		{`{"name":5}`, "name"},
		{`{"items":[{},{"score":"x"}]}`, "items[1].score"},
		{`{"items":[{"tags":["a",3]}]}`, "items[0].tags[1]"},
		{`{"grid":[[1,2],[3,"four"]]}`, "grid[1][1]"},
		{`{"items":[{"score":1},{"scor":2}]}`, "items[1].scor"},
		{`{"items":{"score":1}}`, "items"},
		{`{"name":"a","extra":{"deep":[1]}}`, "extra"},
		{`{"items":[{"score":1e999}]}`, "items[0].score"},
		{`{"name":"a"`, "body"},
		{`{"name":"a"} []`, "body"},
		{`null x`, "body"},
		{`{"name":"a","name":"b"}`, "name"},
		{`{"Name":"a"}`, "Name"},
		{`{"items":[{"tags":[],"tags":[]}]}`, "items[0].tags"},
		{"{\"name\":\"\xff\"}", "body"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			_, err := decode[codecOuter](req)
			e, ok := err.(*apperr.Error)
			if !ok || len(e.Fields) == 0 {
				t.Fatalf("err = %v, want a field error", err)
			}
			if e.Fields[0].Field != tt.field {
				t.Fatalf("field = %q (%s), want %q", e.Fields[0].Field, e.Fields[0].Message, tt.field)
			}
		})
	}
}

func TestDecodeAcceptsJSONMediaTypesOnly(t *testing.T) {
	t.Parallel()
	for ct, ok := range map[string]bool{
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"application/merge-patch+json":      true,
		"text/json":                         false,
		"application/x-www-form-urlencoded": false,
		"":                                  false,
	} {
		req := httptest.NewRequest("POST", "/", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", ct)
		_, err := decode[codecOuter](req)
		if (err == nil) != ok {
			t.Errorf("Content-Type %q: err = %v", ct, err)
		}
		if err != nil && apperr.CodeOf(err) != apperr.Unsupported {
			t.Errorf("Content-Type %q: code %s, want unsupported", ct, apperr.CodeOf(err))
		}
	}
}
