package matchrules

import (
	"cmp"
	"math"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// The types of an attribute's values.
const (
	TypeString     = "string"
	TypeNumber     = "number"
	TypeStringList = "string_list"
)

// MaxListItems bounds a string_list value: the searches handle a ticket's list as a bit set
// of one word.
const MaxListItems = 64

// Attribute declares an attribute tickets carry.
type Attribute struct {
	Type string // TypeString, TypeNumber or TypeStringList
	// MaxItems bounds a string_list (1..MaxListItems); 0 means MaxListItems.
	MaxItems int
	// Default is the value of a ticket that does not give one; nil: a ticket must give it
	// when a rule reads it.
	Default *Value
}

// ListLimit is the most values a string_list of the attribute holds: MaxItems, or
// MaxListItems.
func (a Attribute) ListLimit() int { return cmp.Or(a.MaxItems, MaxListItems) }

// Value is an attribute's value on a ticket: Str, Num or List by Type.
type Value struct {
	Type string
	Str  string
	Num  float64
	List []string
}

// StringValue, NumberValue and ListValue make a Value of each type.
func StringValue(s string) Value   { return Value{Type: TypeString, Str: s} }
func NumberValue(x float64) Value  { return Value{Type: TypeNumber, Num: x} }
func ListValue(xs ...string) Value { return Value{Type: TypeStringList, List: xs} }

// addAttributeDeclarationFaults checks the attributes c declares: names, types, max_items,
// defaults.
func (c *Config) addAttributeDeclarationFaults(f *apperr.Fields) {
	for name, a := range c.Attributes {
		at := "attributes." + name
		switch name {
		case "":
			f.Add("attributes", "must not have an empty name")
		case RatingAttribute:
			f.Add(at, "is reserved: a distance rule reads the tickets' ratings by that name")
		}
		switch a.Type {
		case TypeString, TypeNumber, TypeStringList:
		default:
			f.Add(at+".type", "must be %q, %q or %q", TypeString, TypeNumber, TypeStringList)
			continue
		}
		if a.MaxItems < 0 || a.MaxItems > MaxListItems || a.MaxItems != 0 && a.Type != TypeStringList {
			f.Add(at+".max_items", "must be between 1 and %d, for a string_list only", MaxListItems)
		}
		if a.Default != nil {
			AddValueFaults(f, func() string { return at + ".default" }, *a.Default, a)
		}
	}
}

// AddValueFaults checks a value against its declaration, naming the fault field(). The
// field's name is built only for a fault: a pass checks every ticket's values.
func AddValueFaults(f *apperr.Fields, field func() string, v Value, a Attribute) {
	if v.Type != a.Type {
		f.Add(field(), "must be a %s", a.Type)
		return
	}
	switch v.Type {
	case TypeNumber:
		if !(math.Abs(v.Num) <= MaxMagnitude) {
			f.Add(field(), "must be a finite number between %g and %g", -MaxMagnitude, MaxMagnitude)
		}
	case TypeStringList:
		if len(v.List) > a.ListLimit() {
			f.Add(field(), "must hold at most %d values", a.ListLimit())
		}
		for j, s := range v.List {
			if s == "" {
				f.Add(field()+"["+strconv.Itoa(j)+"]", "must not be empty")
			}
			for _, x := range v.List[:j] {
				if x == s {
					f.Add(field()+"["+strconv.Itoa(j)+"]", "must not repeat a value: %q is listed before", s)
					break
				}
			}
		}
	}
}
