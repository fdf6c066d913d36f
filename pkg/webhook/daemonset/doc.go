// Package daemonset holds the admission webhooks for apps.kruise.io DaemonSet (Advanced
// DaemonSet), v1alpha1 and v1beta1, each version defaulted by its own rules and both
// validated as v1beta1:
//
//   - a mutating webhook that writes the defaults the CRD schema cannot express
//     (SetDefaults), answered as a JSON patch;
//   - a validating webhook (Validate, ValidateUpdate) that denies invalid objects with a 422
//     whose causes name the offending fields, on CREATE as well as UPDATE.
//
// Registrations gives both to package webhook's server; this package holds no serving code.
package daemonset
