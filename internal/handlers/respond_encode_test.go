package handlers

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
)

// filler sets every field of a value, reached by reflection, to one of the awkward values an
// encoder gets wrong: strings that need escaping, tiny and huge floats and negative zero, nil
// and empty slices and maps, absent and present pointers, times in other zones. A field added
// to a response later is filled too, so an appendJSON that does not write it fails the tests
// below.
type filler struct{ rng *rand.Rand }

var fillStrings = []string{"alice", "tk-00017", `quote"d`, "back\\slash", "tab\tid", "<html>&", "ünïcødé", "\u2028", "\x01", "", "\xff\xfe", "eu"}

var fillFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-7, 1e-6, 123456.789, 1e20, 1e21, 5e-324, 1.7976931348623157e308, 25, 1234.5678901234567}

var fillConnections = []string{`{"host":"10.0.0.1","port":7777}`, ` { "a" : [1, 2 ,3], "b":"<&>" } `, `"s"`, `null`}

func (f filler) str() string {
	return fillStrings[f.rng.IntN(len(fillStrings))] + strconv.Itoa(f.rng.IntN(2))
}

func (f filler) float() float64 {
	if f.rng.IntN(3) == 0 {
		return (f.rng.Float64() - 0.5) * math.Pow(10, float64(f.rng.IntN(40)-20))
	}
	return fillFloats[f.rng.IntN(len(fillFloats))]
}

func (f filler) time() time.Time {
	zones := []*time.Location{time.UTC, time.FixedZone("", 2*3600), time.FixedZone("X", -(5*3600 + 30*60))}
	return time.Unix(f.rng.Int64N(4e9), f.rng.Int64N(1e9)*int64(f.rng.IntN(2))).In(zones[f.rng.IntN(len(zones))])
}

// fill sets v (settable) to a random value of its type.
func (f filler) fill(v reflect.Value) {
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(f.time()))
		return
	case reflect.TypeFor[json.RawMessage]():
		if f.rng.IntN(3) > 0 {
			v.SetBytes([]byte(fillConnections[f.rng.IntN(len(fillConnections))]))
		}
		return
	case reflect.TypeFor[rulesjson.Value]():
		vals := []matchrules.Value{matchrules.StringValue(f.str()), matchrules.NumberValue(f.float()), matchrules.ListValue(f.str(), f.str())}
		v.Set(reflect.ValueOf(rulesjson.Value{Value: vals[f.rng.IntN(len(vals))]}))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(f.str())
	case reflect.Float64:
		v.SetFloat(f.float())
	case reflect.Int:
		v.SetInt(int64(f.rng.IntN(5) - 1))
	case reflect.Bool:
		v.SetBool(f.rng.IntN(2) == 0)
	case reflect.Pointer:
		if f.rng.IntN(3) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			f.fill(v.Elem())
		}
	case reflect.Slice:
		f.fillSlice(v)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i))
		}
	case reflect.Map:
		f.fillMap(v)
	case reflect.Struct:
		for i := range v.NumField() {
			field := v.Field(i)
			// An embedded unexported struct (rankedJSON) has settable fields only this way.
			f.fill(reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem())
		}
	default:
		panic("filler: no rule for " + v.Type().String())
	}
}

func (f filler) fillSlice(v reflect.Value) {
	switch f.rng.IntN(4) {
	case 0:
		return // nil
	case 1:
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		return
	}
	n := 1 + f.rng.IntN(3)
	v.Set(reflect.MakeSlice(v.Type(), n, n))
	for i := range n {
		f.fill(v.Index(i))
	}
}

func (f filler) fillMap(v reflect.Value) {
	switch f.rng.IntN(4) {
	case 0:
		return // nil
	case 1:
		v.Set(reflect.MakeMap(v.Type()))
		return
	}
	v.Set(reflect.MakeMap(v.Type()))
	for range 1 + f.rng.IntN(4) {
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		f.fill(k)
		f.fill(e)
		v.SetMapIndex(k, e)
	}
}

// TestResponseEncodersMatchEncodingJSON holds the hand-written encoders of the answers every
// ticket gets (a ticket, a match, a result's receipt) to encoding/json's output, byte for byte,
// over values with every field filled at random.
func TestResponseEncodersMatchEncodingJSON(t *testing.T) {
	t.Parallel()
	f := filler{rng: rand.New(rand.NewPCG(37, 3))}
	for _, v := range []any{ticketJSON{}, matchOutJSON{}, resultResponse{}} {
		typ := reflect.TypeOf(v)
		for i := range 3000 {
			p := reflect.New(typ)
			f.fill(p.Elem())
			val := p.Interface() // respond is given pointers to them
			var want, got bytes.Buffer
			wantErr := json.NewEncoder(&want).Encode(val)
			gotErr := encodeResponse(&got, val)
			if (wantErr == nil) != (gotErr == nil) || !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("%s case %d differs from encoding/json (errors %v, %v):\n got %s\nwant %s", typ, i, gotErr, wantErr, got.Bytes(), want.Bytes())
			}
		}
	}
}

// A value encoding/json cannot write (a rating that is not finite) is its error, a 500
// problem, with nothing of the value written before it.
func TestResponseEncoderLeavesWhatItCannotWriteToEncodingJSON(t *testing.T) {
	t.Parallel()
	v := &ticketJSON{ID: "tk-1", Players: []ticketPlayerOut{{ID: "a", Rating: math.NaN()}}}
	var buf bytes.Buffer
	if err := encodeResponse(&buf, v); err == nil || buf.Len() != 0 {
		t.Fatalf("a NaN rating: error %v, wrote %q", err, buf.Bytes())
	}
	rec := httptest.NewRecorder()
	respond(rec, httptest.NewRequest(http.MethodGet, "/v1/tickets/tk-1", nil), slog.New(slog.DiscardHandler), http.StatusOK, v)
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("a NaN rating answered %d", rec.Code)
	}
}

// BenchmarkEncodeResponses writes the answers of a 1v1 ticket's requests as the soak makes
// them (its creation, its match's read, its result's receipt) by their appendJSON and by
// encoding/json, which respond used before.
func BenchmarkEncodeResponses(b *testing.B) {
	now := time.Date(2026, 12, 3, 14, 0, 0, 123456789, time.UTC)
	wait := 0.35
	players := []matchTeamOutJSON{{Players: []matchPlayerJSON{{ID: "sab12-17-0", TicketID: "tk-1", Rating: 1012.5}}, RatingTotal: 1012.5},
		{Players: []matchPlayerJSON{{ID: "sab12-18-0", TicketID: "tk-2", Rating: 987.25}}, RatingTotal: 987.25}}
	values := []struct {
		name string
		v    any
	}{
		{"ticket", &ticketJSON{ID: "tk-2k4mz0ys6v8hq5r3", Queue: "soak-b59dffc4", Status: "searching", Exclusive: true,
			Players:   []ticketPlayerOut{{ID: "sab12-17-0", Rating: 1012.5, RatingSource: "inline"}},
			CreatedAt: now, ExpiresAt: now.Add(5 * time.Minute), UpdatedAt: now, EstimatedWaitS: &wait}},
		{"match", &matchOutJSON{ID: "mt-824n57ny6c1c57sj9szsmtd1j0", Queue: "soak-b59dffc4", CreatedAt: now, Teams: players,
			Tickets: []string{"tk-1", "tk-2"}, Pairs: []pairJSON{{Players: [2]string{"sab12-17-0", "sab12-18-0"}, Difference: 25.25, Interval: 25}},
			SkillDifference: 25.25, AverageDifference: 25.25}},
		{"result", &resultResponse{MatchID: "mt-824n57ny6c1c57sj9szsmtd1j0", Context: contextOut{GameType: "soak", Mutators: []string{}, Key: "soak"},
			WinProbability: [2]float64{0.53589, 0.46411}, Updates: []ratingUpdate{
				{ID: "sab12-17-0", Team: 0, Before: 1012.5, After: 1020.731, Weight: 0.42, Games: 3},
				{ID: "sab12-18-0", Team: 1, Before: 987.25, After: 979.019, Weight: 0.42, Games: 3}}}},
	}
	for _, tc := range values {
		var buf bytes.Buffer
		b.Run(tc.name+"/appendJSON", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := encodeResponse(&buf, tc.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := json.NewEncoder(&buf).Encode(tc.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
