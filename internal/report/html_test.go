package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/browsertest"
)

// writePage runs the command with --html on the generated log and returns
// the page.
func writePage(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	code, _, stderr := runCmd(t, jsonl(t, generate().lines), "--html", path, "-")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, page
}

func TestHTMLSelfContainedAndWellFormed(t *testing.T) {
	_, page := writePage(t)
	s := string(page)
	for _, bad := range []string{"<script", "http://", "https://", "@import", "url(", "<link", "ZgotmplZ"} {
		if strings.Contains(s, bad) {
			t.Errorf("page contains %q; it must be self-contained and fully rendered", bad)
		}
	}
	if got := strings.Count(s, "<svg"); got != 4 {
		t.Errorf("page has %d charts, want 4", got)
	}
	for _, want := range []string{"Latency over time", "Outcomes over time", "429s by minute of the hour",
		"Breaker state timeline", "anthropic open 2025-03-04T11:20:00Z–2025-03-04T11:21:06Z"} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if err := wellFormed(page); err != nil {
		t.Errorf("page is not well-formed: %v", err)
	}
}

// wellFormed checks that doc parses as XML with every tag closed in order.
func wellFormed(doc []byte) error {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	var stack []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) > 0 {
				return errors.New("unclosed <" + strings.Join(stack, "> <") + ">")
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e.Name.Local)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
}

func TestHTMLEmptyLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.html")
	code, _, stderr := runCmd(t, nil, "--html", path, "-")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := wellFormed(page); err != nil {
		t.Errorf("empty page is not well-formed: %v", err)
	}
	if strings.Contains(string(page), "<svg") {
		t.Error("empty page has charts")
	}
}

func TestHTMLEscapes(t *testing.T) {
	l := Line{TS: genStart, RequestID: "x", Provider: `<b>"evil"&`, Model: "</svg><script>", Outcome: "ok", Status: 200, LatencyMS: 5}
	var b bytes.Buffer
	s := Summarize([]Line{l})
	if err := WriteHTML(&b, &s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script") || strings.Contains(b.String(), "<b>\"evil") {
		t.Error("provider and model names reach the page unescaped")
	}
	if err := wellFormed(b.Bytes()); err != nil {
		t.Errorf("page is not well-formed: %v", err)
	}
}

// TestHTMLInChromium renders the page in headless Chromium: a screenshot
// of it comes out, and the document the browser built shows the failed
// calls, the failure reasons and their sample request ids.
// SLUICE_REPORT_SCREENSHOT=path keeps the screenshot there and the page at
// path.html.
func TestHTMLInChromium(t *testing.T) {
	browsertest.Need(t)
	path, page := writePage(t)
	shot := filepath.Join(t.TempDir(), "r.png")
	browsertest.Run(t, "file://"+path, "--screenshot="+shot, "--window-size=1200,2000")
	fi, err := os.Stat(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if fi.Size() < 20_000 {
		t.Errorf("screenshot is %d bytes; a page with four charts is larger", fi.Size())
	}
	dom := string(browsertest.Run(t, "file://"+path, "--dump-dom"))
	for _, want := range []string{"Failed calls: 29 of 667", "Failures by reason and provider",
		"circuit_open", "timeout_idle", "status_503", "req-00665 req-00664 req-00663", "ok again since"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	if keep := os.Getenv("SLUICE_REPORT_SCREENSHOT"); keep != "" {
		b, _ := os.ReadFile(shot)
		os.WriteFile(keep, b, 0o644)
		os.WriteFile(keep+".html", page, 0o644)
	}
}

// htmlPage returns the page WriteHTML makes of lines, failing the test
// when the page is not well-formed.
func htmlPage(t *testing.T, lines []Line) string {
	t.Helper()
	s := Summarize(lines)
	var b bytes.Buffer
	if err := WriteHTML(&b, &s); err != nil {
		t.Fatal(err)
	}
	if err := wellFormed(b.Bytes()); err != nil {
		t.Errorf("page is not well-formed: %v", err)
	}
	return b.String()
}
