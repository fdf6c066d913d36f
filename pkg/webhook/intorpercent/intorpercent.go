// Package intorpercent validates the int-or-percent fields of admitted objects
// (maxUnavailable, maxSurge, partition, minAvailable): a non-negative integer, or "N%" with
// N from 0 to 100. The admission packages of every resource share it, so that one spelling
// is accepted, and refused with one message, everywhere.
package intorpercent

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks that an optional value is a non-negative integer or a percentage from 0%
// to 100%.
func Validate(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 0 {
			return field.ErrorList{field.Invalid(fldPath, v.IntVal, "must be greater than or equal to 0")}
		}
	case intstr.String:
		percent, ok := ParsePercent(v.StrVal)
		if !ok {
			return field.ErrorList{field.Invalid(fldPath, v.StrVal, "must be an integer or a percentage (e.g. '25%')")}
		}
		if percent > 100 {
			return field.ErrorList{field.Invalid(fldPath, v.StrVal, "must not be greater than 100%")}
		}
	default:
		return field.ErrorList{field.Invalid(fldPath, v.String(), fmt.Sprintf("unknown int-or-string type %d", v.Type))}
	}
	return nil
}

// ParsePercent returns N of a string "N%", N being decimal digits only: a sign, spaces or a
// fraction are refused, as the controllers' own parsing would refuse them.
func ParsePercent(s string) (int, bool) {
	digits, found := strings.CutSuffix(s, "%")
	if !found || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0, false // too many digits
	}
	return n, true
}
