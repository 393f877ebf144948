package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// A reader follows the documentation's links: every relative link of README.md and docs/*.md
// must name a file of the repository, and a #fragment one of the target page's headings (as
// GitHub makes a heading's anchor: lower case, punctuation dropped, spaces as hyphens).
func TestDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../README.md")
	anchors := map[string]map[string]bool{}
	for _, page := range pages {
		anchors[filepath.Clean(page)] = headingAnchors(t, page)
	}
	link := regexp.MustCompile(`\]\(([^)\s]*)\)`)
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				checkDocLink(t, anchors, page, i+1, m[1])
			}
		}
	}
}

func checkDocLink(t *testing.T, anchors map[string]map[string]bool, page string, line int, target string) {
	t.Helper()
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return
	}
	file, fragment, _ := strings.Cut(target, "#")
	resolved := filepath.Clean(page)
	if file != "" {
		resolved = filepath.Join(filepath.Dir(page), file)
		if _, err := os.Stat(resolved); err != nil {
			t.Errorf("%s:%d: %s: no such file", page, line, target)
			return
		}
	}
	if fragment == "" {
		return
	}
	if known, ok := anchors[resolved]; ok && !known[fragment] {
		t.Errorf("%s:%d: %s: %s has no heading with anchor %q", page, line, target, resolved, fragment)
	}
}

// headingAnchors returns the anchors GitHub gives the page's headings (outside code fences),
// a repeated one numbered -1, -2, ... after the first.
func headingAnchors(t *testing.T, page string) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	anchors, seen, fenced := map[string]bool{}, map[string]int{}, false
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		heading, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fenced || !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		anchor := slugOf(heading)
		if n := seen[anchor]; n > 0 {
			anchors[anchor+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[anchor] = true
		}
		seen[anchor]++
	}
	return anchors
}

func slugOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
