package config

import (
	"reflect"
	"testing"
	"time"
)

// Every variable of the table is bound to its own field of Values, of the
// type its kind parses to: a variable cannot be read under a misspelt name
// or land in another's field.
func TestTableBindsEachVariableToItsOwnTypedField(t *testing.T) {
	want := map[kind]reflect.Type{
		kString: reflect.TypeFor[*string](), kSecret: reflect.TypeFor[*string](), kURL: reflect.TypeFor[*string](),
		kInt: reflect.TypeFor[*int](), kFloat: reflect.TypeFor[*float64](), kBool: reflect.TypeFor[*bool](),
		kDuration: reflect.TypeFor[*time.Duration](), kList: reflect.TypeFor[*[]string](),
	}
	var v Values
	seen := map[any]string{}
	for _, s := range specs {
		p := s.field(&v)
		if reflect.TypeOf(p) != want[s.kind] {
			t.Errorf("%s is bound to a %T, want %s", s.name, p, want[s.kind])
		}
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s share a field", s.name, other)
		}
		seen[p] = s.name
	}
}
