package queue

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxRefusalRead is how much of a refusing answer's body is read for its detail.
const MaxRefusalRead = 4 << 10

// maxRefusalDetail bounds the detail kept of a refusal, in characters: it is shown in every
// waiting ticket's waiting_on, the stats and the logs, so a page of HTML or a stack trace
// must not be.
const maxRefusalDetail = 200

// RefusalDetail is what a refusing answer's body (at most MaxRefusalRead of it) says, for a
// person to read: a problem document's detail, else its title (as client.MatchFunctionHandler
// and the service itself answer), else the body as text; control characters and runs of
// spaces become one space, bytes that are not UTF-8 U+FFFD, and past maxRefusalDetail
// characters it is cut, ending in an ellipsis. "" for an empty body.
func RefusalDetail(body []byte) string {
	var problem struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	text := string(body)
	if json.Unmarshal(body, &problem) == nil {
		switch {
		case strings.TrimSpace(problem.Detail) != "":
			text = problem.Detail
		case strings.TrimSpace(problem.Title) != "":
			text = problem.Title
		}
	}
	fields := strings.FieldsFunc(strings.ToValidUTF8(text, string(utf8.RuneError)), func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r)
	})
	out := strings.Join(fields, " ")
	if utf8.RuneCountInString(out) <= maxRefusalDetail {
		return out
	}
	return string([]rune(out)[:maxRefusalDetail]) + "…"
}
