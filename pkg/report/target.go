package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// Sender is who a message is from: the persona's display name and accent
// colour.
type Sender struct {
	Agent string // slug, e.g. platform-sre
	Name  string // display name, e.g. Noor
	Color int    // 0xRRGGBB
}

// Persona accent colours (REPORT_COLOR overrides them).
var Colors = map[string]int{
	"noor": 0x5865F2,
	"sol":  0xF1C40F,
	"dax":  0x2ECC71,
	"ada":  0xE91E63,
	"vera": 0x9B59B6,
}

// NewSender builds the sender of an agent (persona name and slug, e.g.
// noor and platform-sre): displayName (AGENT_DISPLAY_NAME) defaults to the
// capitalised persona name, color (REPORT_COLOR: "0x5865F2", "#5865F2" or
// "5865F2") to the persona's colour.
func NewSender(name, slug, displayName, color string) (Sender, error) {
	s := Sender{Agent: slug, Name: strings.TrimSpace(displayName), Color: Colors[name]}
	if s.Name == "" && name != "" {
		s.Name = strings.ToUpper(name[:1]) + name[1:]
	}
	if strings.TrimSpace(color) != "" {
		c, err := ParseColor(color)
		if err != nil {
			return Sender{}, err
		}
		s.Color = c
	}
	return s, nil
}

// ParseColor reads "0x5865F2", "#5865F2" or "5865F2".
func ParseColor(s string) (int, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X"), "#")
	if len(t) != 6 {
		return 0, fmt.Errorf("REPORT_COLOR %q is not a colour like 0x5865F2 or #5865F2", s)
	}
	v, err := strconv.ParseUint(t, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("REPORT_COLOR %q is not a colour like 0x5865F2 or #5865F2", s)
	}
	return int(v), nil
}

// Hex is the colour as "#RRGGBB".
func (s Sender) Hex() string { return fmt.Sprintf("#%06X", s.Color) }

// Message is one report on its way to one target.
type Message struct {
	Sender Sender
	// Task is the dedupe key of what produced it (a pulse task key).
	Task string
	// Thread is the thread the message belongs to: where the chat has
	// threads, the id a ThreadTarget answered for the first post (a
	// follow-up goes there); for the generic webhook the key receivers
	// group by. "" starts no thread.
	Thread string
	Rendered
}

// ThreadTarget is a target whose chat has threads: SendThread posts m into
// m.Thread, or starts a thread named after m.Title when m.Thread is "",
// and returns the thread's id ("" when it started none).
type ThreadTarget interface {
	Target
	SendThread(ctx context.Context, m Message) (sent int, thread string, err error)
}

// Target is one place reports go. Send posts m, possibly as several
// messages, and returns how many it delivered before an error: a partial
// multi-message delivery still counts as delivered.
type Target interface {
	Name() string
	Send(ctx context.Context, m Message) (sent int, err error)
}

// DefaultTimeout bounds one webhook request.
const DefaultTimeout = 15 * time.Second

// webhook is the HTTP side every target shares. The URL carries the
// webhook's secret, so it never appears in an error or a log: errors name
// the target and the host only.
type webhook struct {
	target string
	url    string
	host   string
	client *http.Client
}

func newWebhook(target, raw string, client *http.Client) (webhook, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return webhook{}, fmt.Errorf("%s webhook URL is not an http(s) URL", target)
	}
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	return webhook{target: target, url: u.String(), host: u.Host, client: client}, nil
}

// DeliveryError is a failed webhook request; it never holds the URL.
type DeliveryError struct {
	Target string
	Host   string
	Status int    // 0 when no answer arrived
	Msg    string // the answer's first bytes, or the transport error
}

func (e *DeliveryError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s webhook at %s answered %d: %s", e.Target, e.Host, e.Status, e.Msg)
	}
	return fmt.Sprintf("%s webhook at %s: %s", e.Target, e.Host, e.Msg)
}

// post sends v as JSON; any 2xx is success.
func (w webhook) post(ctx context.Context, v any) error { return w.postQuery(ctx, nil, v, nil) }

// postQuery sends v as JSON with query parameters added to the URL and,
// when out is set, decodes the answer into it.
func (w webhook) postQuery(ctx context.Context, query url.Values, v any, out any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s payload: %w", w.target, err)
	}
	target := w.url
	if len(query) > 0 {
		u, _ := url.Parse(w.url) // parsed at construction
		q := u.Query()
		for k, vs := range query {
			q[k] = vs
		}
		u.RawQuery = q.Encode()
		target = u.String()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return &DeliveryError{Target: w.target, Host: w.host, Msg: "building the request failed"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "kubecrew-report/1")
	resp, err := w.client.Do(req)
	if err != nil {
		return &DeliveryError{Target: w.target, Host: w.host, Msg: transportMessage(err)}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16)) // let the connection be reused
	if resp.StatusCode/100 != 2 {
		return &DeliveryError{Target: w.target, Host: w.host, Status: resp.StatusCode, Msg: safetext.Clean(string(answer[:min(len(answer), 300)]), 200)}
	}
	if out != nil && len(answer) > 0 {
		// The post went through; an answer we cannot read only loses the
		// thread id (a follow-up then starts a new message).
		_ = json.Unmarshal(answer, out)
	}
	return nil
}

// transportMessage is a transport error without the request URL (a
// *url.Error prints it, secret path and all).
func transportMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return safetext.Clean(err.Error(), 200)
}
