package clonesetutil

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// percentPattern is what a percentage of a CloneSet's knobs may say before its "%": a
// decimal number, with a sign and a fraction allowed, as OpenKruise reads it.
var percentPattern = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]+)?$`)

// ScaledValue is the number of pods an int-or-percent knob of a CloneSet (partition,
// maxUnavailable, maxSurge, scaleStrategy.maxUnavailable) stands for out of total: an
// integer as it is; "N%" as N percent of total, rounded up or down. Percentages above 100
// and below 0, and fractions, are allowed, as in OpenKruise; anything else is an error.
func ScaledValue(v *intstr.IntOrString, total int, roundUp bool) (int, error) {
	if v == nil {
		return 0, fmt.Errorf("no value")
	}
	switch v.Type {
	case intstr.Int:
		return int(v.IntVal), nil
	case intstr.String:
		digits, isPercent := strings.CutSuffix(v.StrVal, "%")
		if !isPercent || !percentPattern.MatchString(digits) {
			return 0, fmt.Errorf("%q is neither an integer nor a percentage", v.StrVal)
		}
		percent, err := strconv.ParseFloat(digits, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a percentage: %w", v.StrVal, err)
		}
		scaled := percent * float64(total) / 100
		if math.Abs(scaled) > math.MaxInt32 {
			return 0, fmt.Errorf("%q of %d is out of range", v.StrVal, total)
		}
		if roundUp {
			return int(math.Ceil(scaled)), nil
		}
		return int(math.Floor(scaled)), nil
	}
	return 0, fmt.Errorf("unknown int-or-string type %d", v.Type)
}
