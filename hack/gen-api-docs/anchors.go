package main

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// slug is the anchor GitHub gives a heading: the text in lower case, without punctuation,
// spaces turned into hyphens. Links within the page are built with it.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	headingLine    = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	explicitAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	pageLink       = regexp.MustCompile(`\]\(#([^)\s]*)\)`)
	fence          = regexp.MustCompile("^ {0,3}(```|~~~)")
)

// checkAnchors makes sure a page can be navigated: no two headings (or explicit anchors)
// share an anchor, and every link to an anchor of the page finds one. Headings and links
// inside fenced code blocks do not count, as renderers treat them as text.
func checkAnchors(page []byte) error {
	anchors := map[string]int{}
	var links []string
	inFence := false
	scanner := bufio.NewScanner(bytes.NewReader(page))
	scanner.Buffer(make([]byte, 0, 64*1024), len(page)+1)
	for scanner.Scan() {
		line := scanner.Text()
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := headingLine.FindStringSubmatch(line); m != nil {
			anchors[slug(m[2])]++
		}
		for _, m := range explicitAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]]++
		}
		for _, m := range pageLink.FindAllStringSubmatch(line, -1) {
			links = append(links, m[1])
		}
	}
	if err := scanner.Err(); err != nil {
		return fmt.Errorf("reading the page: %w", err)
	}
	var problems []string
	for a, n := range anchors {
		if n > 1 {
			problems = append(problems, fmt.Sprintf("anchor #%s is used by %d headings", a, n))
		}
	}
	missing := map[string]bool{}
	for _, l := range links {
		if anchors[l] == 0 && !missing[l] {
			missing[l] = true
			problems = append(problems, fmt.Sprintf("link to #%s finds no heading", l))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return fmt.Errorf("the page cannot be navigated: %s", strings.Join(problems, "; "))
}
