package handlers

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// appendJSON writes the response as encoding/json would (the property test in
// matchmake_encode_test.go holds it to that, byte for byte), without reflection or an
// intermediate buffer: /v1/matchmake's answers are its largest and most frequent, and
// encoding/json's reflection over them was a large share of the endpoint's CPU
// (docs/performance.md, "HTTP").
func (r *matchmakeResponse) appendJSON(b []byte) []byte {
	b = append(b, `{"strategy":`...)
	b = appendString(b, string(r.Strategy))
	b = append(b, `,"team_size":`...)
	b = strconv.AppendInt(b, int64(r.TeamSize), 10)
	b = append(b, `,"matches":`...)
	b = appendList(b, r.Matches, func(b []byte, m *matchJSON) []byte { return m.appendJSON(b) })
	b = append(b, `,"unmatched":`...)
	b = appendList(b, r.Unmatched, func(b []byte, u *unmatchedJSON) []byte {
		b = append(b, `{"id":`...)
		b = appendString(b, u.ID)
		b = append(b, `,"rating":`...)
		b = appendFloat(b, u.Rating)
		return append(b, '}')
	})
	s := &r.Stats
	b = append(b, `,"stats":{"players":`...)
	b = strconv.AppendInt(b, int64(s.Players), 10)
	b = append(b, `,"matches":`...)
	b = strconv.AppendInt(b, int64(s.Matches), 10)
	b = append(b, `,"unmatched":`...)
	b = strconv.AppendInt(b, int64(s.Unmatched), 10)
	b = append(b, `,"elapsed_ms":`...)
	b = appendFloat(b, s.ElapsedMS)
	b = append(b, `,"skill_difference":`...)
	b = s.SkillDifference.appendJSON(b)
	b = append(b, `,"average_difference":`...)
	b = s.AverageDifference.appendJSON(b)
	b = append(b, `,"pair_difference":`...)
	b = s.PairDifference.appendJSON(b)
	return append(b, "}}\n"...)
}

func (m *matchJSON) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"teams":[`...)
	for t := range m.Teams {
		if t > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"players":`...)
		b = appendStrings(b, m.Teams[t].Players)
		b = append(b, `,"rating_total":`...)
		b = appendFloat(b, m.Teams[t].RatingTotal)
		b = append(b, '}')
	}
	b = append(b, `],"pairs":`...)
	b = appendList(b, m.Pairs, func(b []byte, p *pairJSON) []byte {
		b = append(b, `{"players":[`...)
		b = appendString(b, p.Players[0])
		b = append(b, ',')
		b = appendString(b, p.Players[1])
		b = append(b, `],"difference":`...)
		b = appendFloat(b, p.Difference)
		b = append(b, `,"interval":`...)
		b = appendFloat(b, p.Interval)
		return append(b, '}')
	})
	b = append(b, `,"interval":`...)
	b = appendFloat(b, m.Interval)
	b = append(b, `,"skill_difference":`...)
	b = appendFloat(b, m.SkillDifference)
	b = append(b, `,"average_difference":`...)
	b = appendFloat(b, m.AverageDifference)
	return append(b, '}')
}

func (d distributionJSON) appendJSON(b []byte) []byte {
	b = append(b, `{"mean":`...)
	b = appendFloat(b, d.Mean)
	b = append(b, `,"median":`...)
	b = appendFloat(b, d.Median)
	b = append(b, `,"max":`...)
	b = appendFloat(b, d.Max)
	return append(b, '}')
}

// appendList writes a JSON array of list's elements, or null for a nil slice, as
// encoding/json does.
func appendList[T any](b []byte, list []T, elem func([]byte, *T) []byte) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = elem(b, &list[i])
	}
	return append(b, ']')
}

func appendStrings(b []byte, ss []string) []byte {
	return appendList(b, ss, func(b []byte, s *string) []byte { return appendString(b, *s) })
}

// appendString quotes s as encoding/json does. Ids are almost always plain ASCII, which is
// copied as is; anything else (quotes, control characters, HTML-sensitive bytes, non-ASCII)
// goes through encoding/json itself, so the escaping rules are its own.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			quoted, _ := json.Marshal(s)
			return append(b, quoted...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendFloat formats f as encoding/json does (ES6 number formatting). Non-finite values
// cannot occur in a response: the matchmaker bounds every rating and interval.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
