package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// reservedAnnotationsNotes is the notes file that makes the "Reserved annotations"
// section. The other notes files are named after a kind (see kind.notesName).
const reservedAnnotationsNotes = "reserved-annotations.md"

// notes are the hand-written parts of the reference, each included verbatim.
type notes struct {
	// byKind holds the notes of a kind, by kind name.
	byKind map[string][]byte
	// reserved is the body of the "Reserved annotations" section; nil when absent.
	reserved []byte
}

// loadNotes reads the notes of dir. Every file must be one the reference includes, so a
// misnamed file fails instead of silently missing from the page; a missing dir means no
// notes.
func loadNotes(dir string, kinds []kind) (notes, error) {
	n := notes{byKind: map[string][]byte{}}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return n, nil
	}
	if err != nil {
		return n, fmt.Errorf("listing notes: %w", err)
	}
	byFile := map[string]string{}
	var expected []string
	for _, k := range kinds {
		byFile[k.notesName()] = k.Name
		expected = append(expected, k.notesName())
	}
	sort.Strings(expected)
	expected = append(expected, reservedAnnotationsNotes)
	for _, e := range entries {
		name := e.Name()
		kindName, isKind := byFile[name]
		if e.IsDir() || (!isKind && name != reservedAnnotationsNotes) {
			return n, fmt.Errorf("notes: %s is not one of the files the reference includes (%s)",
				filepath.Join(dir, name), strings.Join(expected, ", "))
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return n, fmt.Errorf("reading notes: %w", err)
		}
		data = append(bytes.TrimRight(data, " \t\r\n"), '\n')
		if isKind {
			n.byKind[kindName] = data
		} else {
			n.reserved = data
		}
	}
	return n, nil
}
