// Package intern numbers the values of a rule, so that the passes' searches compare small
// integers rather than strings: Table numbers strings in order of first sight, SortIDs
// sorts a ticket's few ids.
package intern

// Table numbers strings in order of first sight. A rule's values are usually few (modes,
// maps): up to a few dozen, comparing with each is faster than hashing.
type Table struct {
	// Names are the strings by id.
	Names []string
	ids   map[string]int32 // once there are many
	// first holds, by a value's first byte, one more than the id of the last value seen
	// with it: a value is usually found at the first comparison.
	first [256]int32
}

// linearMax is the most strings a Table finds by comparison, before it keeps a map.
const linearMax = 32

// ID is s's number, a new one for a string not seen before.
func (n *Table) ID(s string) int32 {
	if n.ids == nil {
		if len(s) > 0 {
			if i := n.first[s[0]] - 1; i >= 0 && n.Names[i] == s {
				return i
			}
		}
		for i, x := range n.Names {
			if x == s {
				n.remember(s, int32(i))
				return int32(i)
			}
		}
		n.remember(s, int32(len(n.Names)))
		n.Names = append(n.Names, s)
		if len(n.Names) == linearMax {
			n.ids = make(map[string]int32, 2*linearMax)
			for i, x := range n.Names {
				n.ids[x] = int32(i)
			}
		}
		return int32(len(n.Names) - 1)
	}
	id, ok := n.ids[s]
	if !ok {
		id = int32(len(n.Names))
		n.ids[s] = id
		n.Names = append(n.Names, s)
	}
	return id
}

func (n *Table) remember(s string, id int32) {
	if len(s) > 0 {
		n.first[s[0]] = id + 1
	}
}

// SortIDs sorts a list of a few ids (insertion sort: a ticket lists a handful).
func SortIDs(s []int32) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
