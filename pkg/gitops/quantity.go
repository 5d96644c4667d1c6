package gitops

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
)

// Memory quantities. A subset of Kubernetes' resource.Quantity grammar: what
// memory limits are written with in practice. Anything else is refused rather
// than guessed at.
//
//	binary:  Ki Mi Gi Ti          (1024^n)
//	decimal: k M G T              (1000^n)
//	plain:   bytes, e.g. 134217728, or 1.5e9 (e-notation, no unit)
//
// Signs, milli ("m"), Pi/Ei/P/E and leading dots are refused.
var quantityRE = regexp.MustCompile(`^([0-9]+)(?:\.([0-9]+))?(?:([eE])([0-9]{1,2})|(Ki|Mi|Gi|Ti|k|M|G|T))?$`)

var unitBytes = map[string]int64{
	"":   1,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
	"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
}

const (
	mi = int64(1) << 20
	gi = int64(1) << 30
	// maxMemoryBytes bounds what is accepted (1Pi): past it a value is
	// a typo, not a limit.
	maxMemoryBytes = int64(1) << 50
	// maxQuantityLen bounds the text of a quantity.
	maxQuantityLen = 32
)

// ErrQuantity is wrapped by every quantity parse error.
var ErrQuantity = errors.New("unparseable memory quantity")

// parseMemory returns the number of bytes q denotes, exactly.
func parseMemory(q string) (*big.Rat, error) {
	if len(q) == 0 || len(q) > maxQuantityLen {
		return nil, fmt.Errorf("%w: %q", ErrQuantity, q)
	}
	m := quantityRE.FindStringSubmatch(q)
	if m == nil {
		return nil, fmt.Errorf("%w: %q (want digits with Ki/Mi/Gi/Ti, k/M/G/T or plain bytes)", ErrQuantity, q)
	}
	num := m[1]
	if m[2] != "" {
		num += "." + m[2]
	}
	v, ok := new(big.Rat).SetString(num)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrQuantity, q)
	}
	if m[3] != "" {
		exp := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(atoiSmall(m[4]))), nil)
		v.Mul(v, new(big.Rat).SetInt(exp))
	} else {
		v.Mul(v, new(big.Rat).SetInt64(unitBytes[m[5]]))
	}
	if v.Sign() <= 0 {
		return nil, fmt.Errorf("%w: %q is not a positive amount of memory", ErrQuantity, q)
	}
	if v.Cmp(new(big.Rat).SetInt64(maxMemoryBytes)) > 0 {
		return nil, fmt.Errorf("%w: %q is larger than 1Pi", ErrQuantity, q)
	}
	return v, nil
}

func atoiSmall(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// memoryRatio returns new/old as a float for messages and checks.
func memoryRatio(oldQ, newQ string) (float64, error) {
	o, err := parseMemory(oldQ)
	if err != nil {
		return 0, err
	}
	n, err := parseMemory(newQ)
	if err != nil {
		return 0, err
	}
	r, _ := new(big.Rat).Quo(n, o).Float64()
	return r, nil
}

// ratioWithin reports whether 1 < new/old <= 2, computed exactly.
func ratioWithin(oldB, newB *big.Rat) bool {
	if newB.Cmp(oldB) <= 0 {
		return false
	}
	return newB.Cmp(new(big.Rat).Mul(oldB, big.NewRat(MaxFactor, 1))) <= 0
}

// Bump factors.
const (
	// DefaultFactor is the convention for a memory bump (check 3).
	DefaultFactor = 1.5
	// MaxFactor is the largest bump any code path proposes or merges.
	MaxFactor = 2
)

// bumpedQuantity multiplies old by factor and rounds UP to a whole number of
// Mi — except where rounding up would cross the 2× cap, where it rounds down. The rule for the text: a whole number of Gi is written "NGi", anything
// else "NMi" (1536Mi, not 1.5Gi: the text stays an integer a person can
// compare at a glance). The result must still be within 1×..2× of old after
// rounding, else the limit is too small to bump in Mi steps and that is an
// error.
func bumpedQuantity(old string, factor float64) (string, error) {
	if err := checkFactor(factor); err != nil {
		return "", err
	}
	ob, err := parseMemory(old)
	if err != nil {
		return "", err
	}
	f := new(big.Rat)
	if f.SetFloat64(factor) == nil {
		return "", fmt.Errorf("factor %v is not a finite number", factor)
	}
	target := new(big.Rat).Mul(ob, f)
	target.Quo(target, new(big.Rat).SetInt64(mi))
	// ceil(target) for a positive rational
	q, r := new(big.Int).QuoRem(target.Num(), target.Denom(), new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > maxMemoryBytes/mi {
		return "", fmt.Errorf("bumped value of %s is larger than 1Pi", old)
	}
	nmi := q.Int64()
	nb := new(big.Rat).SetInt64(nmi * mi)
	if !ratioWithin(ob, nb) && r.Sign() != 0 {
		// Rounding up crossed the 2× cap: the whole Mi below is the
		// largest value the cap allows.
		nmi--
		nb.SetInt64(nmi * mi)
	}
	if !ratioWithin(ob, nb) {
		r, _ := new(big.Rat).Quo(nb, ob).Float64()
		return "", fmt.Errorf("%s is too small to bump in whole Mi: the nearest value %dMi is %.2f× the old one (allowed: more than 1×, at most %d×)", old, nmi, r, MaxFactor)
	}
	return formatMi(nmi), nil
}

// formatMi writes n Mi as "NGi" when it is a whole number of Gi, else "NMi".
func formatMi(n int64) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%dGi", n/1024)
	}
	return fmt.Sprintf("%dMi", n)
}

func checkFactor(factor float64) error {
	switch {
	case math.IsNaN(factor) || math.IsInf(factor, 0):
		return fmt.Errorf("factor %v is not a finite number", factor)
	case factor <= 1:
		return fmt.Errorf("factor %v is not a raise: it must be more than 1 (default %v)", factor, DefaultFactor)
	case factor > MaxFactor:
		return fmt.Errorf("factor %v is refused: a memory bump is at most %d× (the convention is %v×); a bigger change needs a person", factor, MaxFactor, DefaultFactor)
	}
	return nil
}

func ratioOf(o, n *big.Rat) (float64, bool) {
	return new(big.Rat).Quo(n, o).Float64()
}
