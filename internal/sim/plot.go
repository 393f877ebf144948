package sim

import (
	"fmt"
	"image/color"
	"io"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot draws a comparison, and the optimiser's runs when opt is not nil, as one picture
// ("svg" or "png"), panels stacked:
//
//   - the trade-off: median wait against the share of one-sided matches, a curve per
//     swept configuration (its widening reached 1/4 ... 8 times as late), a point per other
//     configuration, the optimiser's runs and its answer, the wait budget;
//   - how many rounds the winner took, per configuration (8 or more of 11 is one-sided);
//   - the distribution of the team-average difference (Table 8.3's measure), log scale;
//   - the distribution of waits, when anyone waited.
func Plot(w io.Writer, format string, c *Comparison, opt *Optimum) error {
	var panels []*plot.Plot
	if len(c.Sweep) > 0 || opt != nil {
		p, err := tradeOffPanel(c, opt)
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	p, err := roundsPanel(c)
	if err != nil {
		return err
	}
	panels = append(panels, p)
	diffs := make([][]float64, len(c.Results))
	waited := false
	for i, res := range c.Results {
		for _, m := range res.Matches {
			diffs[i] = append(diffs[i], max(m.AverageDifference, 0.01))
		}
		waited = waited || slices.ContainsFunc(res.Waits, func(x float64) bool { return x > 0 })
	}
	p, err = cdfPanel(c, diffs, "Team-average rating difference (the thesis's Table 8.3 measure), log scale", true, 1)
	if err != nil {
		return err
	}
	panels = append(panels, p)
	if waited {
		waits := make([][]float64, len(c.Results))
		for i, res := range c.Results {
			waits[i] = res.Waits
		}
		p, err := cdfPanel(c, waits, "Wait in the queue (s), matched or expired, to the 99th percentile", false, 0.99)
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}

	width, height := 9*vg.Inch, vg.Length(len(panels))*3.6*vg.Inch
	var canvas vg.CanvasWriterTo
	switch format {
	case "svg":
		canvas = vgsvg.New(width, height)
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))}
	default:
		return fmt.Errorf("plot: format %q, want svg or png", format)
	}
	dc := draw.New(canvas)
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(18), PadTop: vg.Points(6), PadBottom: vg.Points(6),
		PadLeft: vg.Points(6), PadRight: vg.Points(10)}
	for i, row := range plot.Align(grid, tiles, dc) {
		grid[i][0].Draw(row[0])
	}
	_, err = canvas.WriteTo(w)
	return err
}

func tradeOffPanel(c *Comparison, opt *Optimum) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Wait against one-sided matches (won by more than 70% of rounds)"
	p.X.Label.Text = "median wait (s)"
	p.Y.Label.Text = "one-sided matches (%)"
	p.Y.Min, p.Y.Max = 0, 100 // room above the data for the legend
	p.X.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	if opt != nil {
		var xys plotter.XYs
		for _, e := range opt.Evaluations {
			xys = append(xys, plotter.XY{X: e.Summary.WaitMedian, Y: 100 * e.Summary.OneSided})
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: color.Gray{Y: 170}, Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
		p.Add(s)
		p.Legend.Add("optimiser runs", s)
	}
	sweeps := map[string]plotter.XYs{}
	factors := map[string][]float64{}
	for _, pt := range c.Sweep {
		sweeps[pt.Configuration] = append(sweeps[pt.Configuration], plotter.XY{X: pt.Summary.WaitMedian, Y: 100 * pt.Summary.OneSided})
		factors[pt.Configuration] = append(factors[pt.Configuration], pt.Factor)
	}
	for i, s := range c.Summaries {
		if xys, ok := sweeps[s.Name]; ok {
			l, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, err
			}
			l.Color, pts.Color, pts.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
			p.Add(l, pts)
			fs := factors[s.Name]
			p.Legend.Add(fmt.Sprintf("%s, widening x%g ... x%g as slow", s.Name, fs[0], fs[len(fs)-1]), l, pts)
			continue
		}
		pts, err := plotter.NewScatter(plotter.XYs{{X: s.WaitMedian, Y: 100 * s.OneSided}})
		if err != nil {
			return nil, err
		}
		pts.Color, pts.Shape, pts.Radius = plotutil.Color(i), plotutil.Shape(i), vg.Points(4)
		p.Add(pts)
		p.Legend.Add(s.Name, pts)
	}
	if opt != nil {
		b := opt.Best.Summary
		pts, err := plotter.NewScatter(plotter.XYs{{X: b.WaitMedian, Y: 100 * b.OneSided}})
		if err != nil {
			return nil, err
		}
		pts.Color, pts.Shape, pts.Radius = color.Black, draw.PyramidGlyph{}, vg.Points(5)
		p.Add(pts)
		p.Legend.Add(opt.Best.Configuration.Name, pts)
		line, err := plotter.NewLine(plotter.XYs{{X: opt.WaitBudgetS, Y: 0}, {X: opt.WaitBudgetS, Y: 60}})
		if err != nil {
			return nil, err
		}
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
		p.Legend.Add("median wait budget ("+strconv.FormatFloat(opt.WaitBudgetS, 'g', -1, 64)+" s)", line)
	}
	return p, nil
}

func roundsPanel(c *Comparison) (*plot.Plot, error) {
	p := plot.New()
	rounds := c.Summaries[0].Rounds
	p.Title.Text = fmt.Sprintf("Rounds won by the winner of %d (more than 70%%: one-sided)", rounds)
	p.Y.Label.Text = "matches (%)"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	n := len(c.Summaries)
	width := vg.Points(max(4, 40/float64(n)))
	var names []string
	for k := len(c.Summaries[0].WinnerRounds) - 1; k >= 0; k-- {
		names = append(names, strconv.Itoa(rounds-k))
	}
	for i, s := range c.Summaries {
		vs := make(plotter.Values, len(s.WinnerRounds))
		for k, m := range s.WinnerRounds {
			vs[len(vs)-1-k] = 100 * ratio(m, s.Matches)
		}
		b, err := plotter.NewBarChart(vs, width)
		if err != nil {
			return nil, err
		}
		b.Color, b.LineStyle.Width = plotutil.Color(i), 0
		b.Offset = vg.Length(float64(i)-float64(n-1)/2) * width
		p.Add(b)
		p.Legend.Add(fmt.Sprintf("%s: %.1f%% one-sided", s.Name, 100*s.OneSided), b)
	}
	p.NominalX(names...)
	p.X.Label.Text = "winner's rounds"
	p.Y.Min, p.Y.Max = 0, 1.5*p.Y.Max // room above the bars for the legend
	return p, nil
}

// cdfPanel draws the distribution of each configuration's values as its cumulative share,
// up to the quantile upTo.
func cdfPanel(c *Comparison, values [][]float64, title string, logX bool, upTo float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "at or below (%)"
	p.Add(plotter.NewGrid())
	p.Legend.YOffs = vg.Points(8)
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	for i, vs := range values {
		if len(vs) == 0 {
			continue
		}
		sorted := slices.Sorted(slices.Values(vs))
		xys := make(plotter.XYs, 0, 201)
		for k := range 201 {
			q := upTo * float64(k) / 200
			xys = append(xys, plotter.XY{X: quantile(q, sorted), Y: 100 * q})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = plotutil.Color(i), vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(c.Summaries[i].Name, l)
	}
	return p, nil
}
