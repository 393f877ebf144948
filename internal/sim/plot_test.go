package sim

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"strings"
	"testing"
)

// TestPlotDrawsEveryPanel draws a small comparison with a sweep and an optimiser's runs:
// the SVG is well-formed XML with every panel's title and every configuration's name, the
// PNG decodes at the size asked for, the same data draw the same picture, and an unknown
// format is an error.
func TestPlotDrawsEveryPanel(t *testing.T) {
	t.Parallel()
	sc := smallScenario(300)
	ctx := context.Background()
	c, err := Compare(ctx, &sc, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := Optimize(ctx, &sc, OptimizeOptions{Base: sc.Configurations[2], WaitBudgetS: 6, MaxEvals: 8, Workers: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := Plot(&svg, "svg", c, opt); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(svg.Bytes()))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
	}
	for _, want := range []string{"Wait against one-sided matches", "Rounds won by the winner", "Team-average rating difference",
		"Wait in the queue", "optimiser runs", "median wait budget (6 s)", SearchedName, "no matchmaking", "learned rating"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("the SVG does not say %q", want)
		}
	}
	var again bytes.Buffer
	if err := Plot(&again, "svg", c, opt); err != nil || !bytes.Equal(svg.Bytes(), again.Bytes()) {
		t.Errorf("the same data drew another SVG (error %v)", err)
	}

	var pic bytes.Buffer
	if err := Plot(&pic, "png", c, nil); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&pic)
	if err != nil {
		t.Fatal(err)
	}
	// 9 in wide at 110 dpi; four panels of 3.6 in.
	if b := img.Bounds(); b.Dx() != 990 || b.Dy() != 1584 {
		t.Errorf("PNG %v, want 990 x 1584", b)
	}
	if err := Plot(io.Discard, "gif", c, nil); err == nil {
		t.Error("format gif: no error")
	}
}
