package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// kind is one CRD: a kind of one group, served in one or more versions.
type kind struct {
	Group      string
	Name       string
	Plural     string
	Scope      string
	ShortNames []string
	// Strategy is the CRD's conversion strategy, "None" or "Webhook".
	Strategy string
	Versions []version
}

// version is one version of a kind as its CRD declares it.
type version struct {
	Name    string
	Served  bool
	Storage bool
	// Schema is the version's OpenAPI schema, read into the keywords the tables render.
	Schema schema
	// Tree is the same schema with every keyword, for comparing versions.
	Tree map[string]any
	// Subresources and Columns (the printer columns) are sorted and in CRD order.
	Subresources []string
	Columns      []string
}

// crdFile is the part of a CustomResourceDefinition manifest the reference is made from.
type crdFile struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind       string   `json:"kind"`
			Plural     string   `json:"plural"`
			ShortNames []string `json:"shortNames"`
		} `json:"names"`
		Scope      string `json:"scope"`
		Conversion struct {
			Strategy string `json:"strategy"`
		} `json:"conversion"`
		Versions []struct {
			Name    string `json:"name"`
			Served  bool   `json:"served"`
			Storage bool   `json:"storage"`
			Schema  struct {
				OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
			} `json:"schema"`
			Subresources   map[string]any `json:"subresources"`
			PrinterColumns []struct {
				Name string `json:"name"`
			} `json:"additionalPrinterColumns"`
		} `json:"versions"`
	} `json:"spec"`
}

// schema is an OpenAPI schema node, with the keywords the field tables render.
type schema struct {
	Type                  string            `json:"type"`
	Description           string            `json:"description"`
	Properties            map[string]schema `json:"properties"`
	Items                 *schema           `json:"items"`
	AdditionalProperties  *schema           `json:"additionalProperties"`
	Required              []string          `json:"required"`
	Enum                  []any             `json:"enum"`
	Default               any               `json:"default"`
	Minimum               *float64          `json:"minimum"`
	Maximum               *float64          `json:"maximum"`
	MinLength             *int64            `json:"minLength"`
	MaxLength             *int64            `json:"maxLength"`
	Pattern               string            `json:"pattern"`
	MinItems              *int64            `json:"minItems"`
	MaxItems              *int64            `json:"maxItems"`
	MaxProperties         *int64            `json:"maxProperties"`
	Format                string            `json:"format"`
	IntOrString           bool              `json:"x-kubernetes-int-or-string"`
	PreserveUnknownFields bool              `json:"x-kubernetes-preserve-unknown-fields"`
	ListType              string            `json:"x-kubernetes-list-type"`
	ListMapKeys           []string          `json:"x-kubernetes-list-map-keys"`
	Validations           []map[string]any  `json:"x-kubernetes-validations"`
	EmbeddedResource      bool              `json:"x-kubernetes-embedded-resource"`
}

// loadKinds reads every CRD manifest (*.yaml) of dir, sorted by group and kind.
func loadKinds(dir string) ([]kind, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("listing CRDs in %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", dir)
	}
	var kinds []kind
	for _, f := range files {
		k, err := loadKind(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if kinds[i].Group != kinds[j].Group {
			return kinds[i].Group < kinds[j].Group
		}
		return kinds[i].Name < kinds[j].Name
	})
	return kinds, nil
}

func loadKind(file string) (kind, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return kind{}, err
	}
	var c crdFile
	if err := yaml.Unmarshal(data, &c); err != nil {
		return kind{}, fmt.Errorf("parsing: %w", err)
	}
	k := kind{
		Group:      c.Spec.Group,
		Name:       c.Spec.Names.Kind,
		Plural:     c.Spec.Names.Plural,
		Scope:      c.Spec.Scope,
		ShortNames: c.Spec.Names.ShortNames,
		Strategy:   c.Spec.Conversion.Strategy,
	}
	if k.Strategy == "" {
		// The API server's default.
		k.Strategy = "None"
	}
	if len(c.Spec.Versions) == 0 {
		return kind{}, fmt.Errorf("kind %s has no versions", k.Name)
	}
	for _, cv := range c.Spec.Versions {
		v := version{Name: cv.Name, Served: cv.Served, Storage: cv.Storage}
		if len(cv.Schema.OpenAPIV3Schema) == 0 {
			return kind{}, fmt.Errorf("version %s of %s has no schema", cv.Name, k.Name)
		}
		if err := json.Unmarshal(cv.Schema.OpenAPIV3Schema, &v.Schema); err != nil {
			return kind{}, fmt.Errorf("reading the schema of %s %s: %w", k.Name, cv.Name, err)
		}
		if err := json.Unmarshal(cv.Schema.OpenAPIV3Schema, &v.Tree); err != nil {
			return kind{}, fmt.Errorf("reading the schema of %s %s: %w", k.Name, cv.Name, err)
		}
		for s := range cv.Subresources {
			v.Subresources = append(v.Subresources, s)
		}
		sort.Strings(v.Subresources)
		for _, col := range cv.PrinterColumns {
			v.Columns = append(v.Columns, col.Name)
		}
		k.Versions = append(k.Versions, v)
	}
	return k, nil
}

// storage is the version objects of the kind are stored in: the one the reference lists in
// full, and the hub the other versions are compared with. A CRD without one (invalid for the
// API server) falls back to its last version.
func (k kind) storage() version {
	for _, v := range k.Versions {
		if v.Storage {
			return v
		}
	}
	return k.Versions[len(k.Versions)-1]
}

// others are the versions other than the storage version, in CRD order.
func (k kind) others() []version {
	var out []version
	for _, v := range k.Versions {
		if v.Name != k.storage().Name {
			out = append(out, v)
		}
	}
	return out
}

// identicalSchemas tells whether every version of the kind has the same schema once
// descriptions are left out. A kind served in one version has nothing to compare.
func (k kind) identicalSchemas() bool {
	first := withoutDescriptions(k.Versions[0].Tree)
	for _, v := range k.Versions[1:] {
		if !reflect.DeepEqual(first, withoutDescriptions(v.Tree)) {
			return false
		}
	}
	return true
}

// heading is the title of the kind's section.
func (k kind) heading() string {
	return fmt.Sprintf("%s (%s)", k.Name, k.Group)
}

// notesName is the file name of the kind's hand-written notes.
func (k kind) notesName() string {
	return strings.ToLower(k.Name) + ".md"
}
