// Package daemonset holds the admission webhooks for apps.kruise.io/v1alpha1 DaemonSet
// (Advanced DaemonSet):
//
//   - a mutating webhook that writes the defaults the CRD schema cannot express
//     (SetDefaults), answered as a JSON patch;
//   - a validating webhook (Validate, ValidateUpdate) that denies invalid objects with a 422
//     whose causes name the offending fields, on CREATE as well as UPDATE.
//
// Registrations gives both to package webhook's server; this package holds no serving code.
package daemonset
