package intorpercent

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParsePercent(t *testing.T) {
	for s, want := range map[string]int{"0%": 0, "7%": 7, "100%": 100, "250%": 250} {
		if got, ok := ParsePercent(s); !ok || got != want {
			t.Errorf("ParsePercent(%q) = %d, %t; want %d, true", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "%", "5", "-5%", "+5%", " 5%", "5.5%", "5 %", "99999999999999999999%"} {
		if got, ok := ParsePercent(s); ok {
			t.Errorf("ParsePercent(%q) = %d, true; want false", s, got)
		}
	}
}

func TestValidate(t *testing.T) {
	path := field.NewPath("spec", "maxUnavailable")
	valid := []*intstr.IntOrString{nil, ptr(intstr.FromInt32(0)), ptr(intstr.FromInt32(3)), ptr(intstr.FromString("0%")), ptr(intstr.FromString("100%"))}
	for _, v := range valid {
		if errs := Validate(v, path); len(errs) != 0 {
			t.Errorf("Validate(%v) = %v, want no error", v, errs)
		}
	}
	invalid := map[string]*intstr.IntOrString{
		"must be greater than or equal to 0": ptr(intstr.FromInt32(-1)),
		"must not be greater than 100%":      ptr(intstr.FromString("101%")),
		"must be an integer or a percentage": ptr(intstr.FromString("5")),
	}
	for want, v := range invalid {
		errs := Validate(v, path)
		if len(errs) != 1 || errs[0].Field != "spec.maxUnavailable" || errs[0].Type != field.ErrorTypeInvalid {
			t.Errorf("Validate(%v) = %v, want one Invalid error on spec.maxUnavailable", v, errs)
			continue
		}
		if got := errs[0].Detail; len(got) < len(want) || got[:len(want)] != want {
			t.Errorf("Validate(%v) detail = %q, want it to start with %q", v, got, want)
		}
	}
}

func ptr(v intstr.IntOrString) *intstr.IntOrString { return &v }
