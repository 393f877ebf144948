package queue_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A refusal's detail is what the answer said, for a person: a problem's detail or title, else
// the text, on one line, valid UTF-8, at most 200 characters and an ellipsis.
func TestRefusalDetail(t *testing.T) {
	long := strings.Repeat("é", 300)
	for _, tc := range []struct{ name, body, want string }{
		{"problem detail", `{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"the match function failed: no model loaded"}`,
			"the match function failed: no model loaded"},
		{"problem title only", `{"title":"Service Unavailable","status":503}`, "Service Unavailable"},
		{"plain text", "down for maintenance\n", "down for maintenance"},
		{"JSON without either", `{"error":"boom"}`, `{"error":"boom"}`},
		{"control characters and runs of space", "line one\r\n\x1b[31mred\x1b[0m\t\t  end\x00", "line one [31mred [0m end"},
		{"not UTF-8", "bad \xff\xfe byte", "bad \uFFFD byte"},
		{"empty", "", ""},
		{"only spaces", " \n\t ", ""},
		{"long", long, strings.Repeat("é", 200) + "…"},
		{"long detail", `{"detail":"` + long + `"}`, strings.Repeat("é", 200) + "…"},
	} {
		got := queue.RefusalDetail([]byte(tc.body))
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > 201 {
			t.Errorf("%s: %q is not valid or too long", tc.name, got)
		}
	}
}

// FuzzRefusalDetail: whatever a function answers, the detail is valid UTF-8, one line with no
// control character, and bounded.
func FuzzRefusalDetail(f *testing.F) {
	f.Add([]byte(`{"detail":"no model loaded"}`))
	f.Add([]byte("<html>\n<body>502</body></html>"))
	f.Add([]byte("\xff\x00\x1b"))
	f.Fuzz(func(t *testing.T, body []byte) {
		got := queue.RefusalDetail(body)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > 201 || strings.ContainsAny(got, "\n\r\t\x00\x1b") ||
			strings.HasPrefix(got, " ") || strings.Contains(got, "  ") {
			t.Fatalf("RefusalDetail(%q) = %q", body, got)
		}
	})
}
