package queue

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// A ticket request (POST /v1/queues/{name}/tickets) and its checks against its queue: what
// a valid ticket is, and what makes two requests the same for an Idempotency-Key.

// NewTicket is a request for a ticket: one player, or a party that must play on one team.
type NewTicket struct {
	Queue   string
	Players []NewPlayer
	// Latencies is the measured latency to each region, in ms; nil when not given.
	Latencies map[string]float64
	// Attributes are the party's values of the queue's attributes; nil when not given.
	Attributes map[string]matchrules.Value
	// TTL is how long the ticket may wait; 0 is the queue's ticket_ttl_s.
	TTL time.Duration
	// IdempotencyKey makes retries safe (the Idempotency-Key header).
	IdempotencyKey string
	// Exclusive false opts the ticket out of the claims across queues (a spectator queue's
	// ticket: lifecycle_claims.go); nil is true.
	Exclusive *bool
}

// NewPlayer is a player of a new ticket, with an inline rating or none (nil: the stored one in
// the queue's context, else the default).
type NewPlayer struct {
	ID     string
	Rating *float64
	Roles  []string // the queue's roles he plays, in order of preference
	Avoid  []string // the players he blocked (avoid.go)
}

// Validate checks a ticket request against its queue, every fault at once.
func (nt *NewTicket) Validate(q Queue) error {
	var f apperr.Fields
	switch {
	case len(nt.Players) == 0:
		f.Add("players", "must hold at least one player")
	case len(nt.Players) > q.MaxPartySize:
		f.Add("players", "must hold at most %d players (the queue's max_party_size)", q.MaxPartySize)
	}
	seen := make(map[string]int, len(nt.Players))
	for i, p := range nt.Players {
		path := "players[" + strconv.Itoa(i) + "]"
		if err := ratings.ValidateID(p.ID); err != nil {
			f.Add(path+".id", "%s", err)
		} else if j, dup := seen[p.ID]; dup {
			f.Add(path+".id", "repeats players[%d].id: a player is in a party once", j)
		} else {
			seen[p.ID] = i
		}
		if p.Rating != nil && !(math.Abs(*p.Rating) <= MaxRating) {
			f.Add(path+".rating", "must be a finite number between -%g and %g", float64(MaxRating), float64(MaxRating))
		}
	}
	if len(nt.Latencies) > MaxRegions {
		f.Add("latencies_ms", "must list at most %d regions", MaxRegions)
	}
	for region, ms := range nt.Latencies {
		if err := ratings.ValidateName(region); err != nil {
			f.Add("latencies_ms", "region %q: %s", region, err)
		} else if len(q.Regions) > 0 && !slices.Contains(q.Regions, region) {
			f.Add("latencies_ms", "region %q is not one of the queue's regions %v", region, q.Regions)
		}
		if !(ms >= 0 && ms <= MaxLatencyMS) {
			f.Add("latencies_ms", "region %q: the latency must be 0..%d ms", region, MaxLatencyMS)
		}
	}
	if nt.TTL != 0 && (nt.TTL < time.Second || nt.TTL > MaxTicketTTL) {
		f.Add("ttl_s", "must be 1..%d seconds", int(MaxTicketTTL.Seconds()))
	}
	if len(nt.Attributes) > 0 || len(q.Rules) > 0 {
		f.Include(tick.ValidateAttributes(q.tickConfig(), nt.Attributes, false)) // attributes.<name>
	}
	addPartitionValueFault(&f, &q, nt.Attributes)
	nt.addRoleFaults(&f, q)
	nt.addAvoidFaults(&f)
	return f.Err()
}

// Fingerprint identifies a ticket request by its meaning, for Idempotency-Key retries: the
// party is a set, and so are the regions.
func (nt *NewTicket) Fingerprint() [32]byte {
	var b []byte
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	num := func(x float64) { b = binary.BigEndian.AppendUint64(b, math.Float64bits(x)) }
	str(nt.Queue)
	b = appendPlayerSet(b, nt.Players)
	regions := make([]string, 0, len(nt.Latencies))
	for r := range nt.Latencies {
		regions = append(regions, r)
	}
	slices.Sort(regions)
	for _, r := range regions {
		str(r)
		num(nt.Latencies[r])
	}
	b = binary.AppendVarint(b, int64(nt.TTL))
	if len(nt.Attributes) > 0 { // a request without attributes hashes as it did before them
		b = appendAttributes(b, nt.Attributes)
	}
	if nt.Exclusive != nil && !*nt.Exclusive { // an exclusive ticket hashes as before the flag
		b = append(b, 4)
	}
	return sha256.Sum256(b)
}

// appendPlayerSet appends players to a fingerprint as a set: by id, each with its inline
// rating or a mark for none.
func appendPlayerSet(b []byte, players []NewPlayer) []byte {
	players = slices.Clone(players)
	slices.SortFunc(players, func(a, b NewPlayer) int { return cmp.Compare(a.ID, b.ID) })
	for _, p := range players {
		b = binary.AppendUvarint(b, uint64(len(p.ID)))
		b = append(b, p.ID...)
		if len(p.Roles) > 0 { // a player without roles hashes as he did before roles existed
			b = append(b, 2)
			b = binary.AppendUvarint(b, uint64(len(p.Roles)))
			for _, r := range p.Roles {
				b = binary.AppendUvarint(b, uint64(len(r)))
				b = append(b, r...)
			}
		}
		if len(p.Avoid) > 0 { // as a set; a player without a list hashes as before lists existed
			b = append(b, 3)
			b = binary.AppendUvarint(b, uint64(len(p.Avoid)))
			for _, id := range slices.Sorted(slices.Values(p.Avoid)) {
				b = binary.AppendUvarint(b, uint64(len(id)))
				b = append(b, id...)
			}
		}
		if p.Rating == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(*p.Rating))
	}
	return b
}

// NewID returns prefix and 26 characters of base32 randomness (130 bits): unique without
// coordination between replicas, and a valid id by ratings.ValidateID.
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + idEncoding.EncodeToString(b[:])
}

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)
