package export

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
)

// postHTTP is the one HTTP exchange export --send makes: a POST of a body
// of known length over HTTP/1.1 on a fresh connection (TLS for https),
// "Connection: close", and the answer's status, header and body (read by
// Content-Length, chunks, or to the end). Written here rather than taken
// from net/http because that package (with its HTTP/2 client) would be
// linked into every rpctap process: it made the static binary 1.9 MB
// larger and every process's peak RSS about 0.9 MiB higher at startup,
// the recording tap and its sink included (docs/performance.md,
// "Startup"). No proxy, redirect or keep-alive: an OTLP export is a POST
// to a collector.
type httpAnswer struct {
	code   int
	status string // "503 Service Unavailable"
	header textproto.MIMEHeader
	body   []byte
}

// maxAnswer bounds the body of an answer read (an OTLP answer is a few
// bytes; an error page rarely more).
const maxAnswer = 4 << 20

func postHTTP(ctx context.Context, u *url.URL, tlsConf *tls.Config, header [][2]string, body []byte) (*httpAnswer, error) {
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	// Closing the connection is what interrupts a blocked read or write
	// when ctx ends before its deadline (a cancelled export).
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if u.Scheme == "https" {
		c := &tls.Config{}
		if tlsConf != nil {
			c = tlsConf.Clone()
		}
		if c.ServerName == "" {
			c.ServerName = u.Hostname()
		}
		tc := tls.Client(conn, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, err
		}
		conn = tc
	}
	var req strings.Builder
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
	for _, h := range header {
		fmt.Fprintf(&req, "%s: %s\r\n", h[0], h[1])
	}
	fmt.Fprintf(&req, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	if _, err := conn.Write(append([]byte(req.String()), body...)); err != nil {
		return nil, err
	}
	return readAnswer(bufio.NewReader(conn))
}

// readAnswer reads an HTTP/1.1 response (skipping interim 1xx ones).
func readAnswer(br *bufio.Reader) (*httpAnswer, error) {
	tp := textproto.NewReader(br)
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return nil, fmt.Errorf("reading the answer: %w", err)
		}
		proto, status, _ := strings.Cut(line, " ")
		codeText, _, _ := strings.Cut(status, " ")
		code, err := strconv.Atoi(codeText)
		if !strings.HasPrefix(proto, "HTTP/1.") || err != nil || code < 100 || code > 999 {
			return nil, fmt.Errorf("the answer is not HTTP/1.x: %q", truncate(line, 60))
		}
		hdr, err := tp.ReadMIMEHeader()
		if err != nil && !(errors.Is(err, io.EOF) && hdr != nil) {
			return nil, fmt.Errorf("reading the answer's header: %w", err)
		}
		if code/100 == 1 {
			continue
		}
		a := &httpAnswer{code: code, status: status, header: hdr}
		var rd io.Reader = br
		switch {
		case strings.EqualFold(hdr.Get("Transfer-Encoding"), "chunked"):
			rd = &chunked{br: br}
		case hdr.Get("Content-Length") != "":
			n, err := strconv.ParseInt(hdr.Get("Content-Length"), 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("the answer's Content-Length %q", hdr.Get("Content-Length"))
			}
			rd = io.LimitReader(br, n)
		case code == 204 || code == 304:
			rd = strings.NewReader("")
		}
		a.body, err = io.ReadAll(io.LimitReader(rd, maxAnswer))
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return a, fmt.Errorf("reading the answer's body: %w", err)
		}
		return a, nil
	}
}

// chunked reads a body in HTTP/1.1 chunked transfer coding (RFC 9112
// section 7.1), trailers ignored.
type chunked struct {
	br   *bufio.Reader
	left int64
	done bool
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.done {
		return 0, io.EOF
	}
	if c.left == 0 {
		line, err := c.br.ReadString('\n')
		if err != nil {
			return 0, io.ErrUnexpectedEOF
		}
		size, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		n, err := strconv.ParseInt(size, 16, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad chunk size %q", truncate(line, 20))
		}
		if n == 0 {
			c.done = true
			return 0, io.EOF
		}
		c.left = n
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		if _, err := c.br.Discard(2); err != nil { // the chunk's CRLF
			return n, io.ErrUnexpectedEOF
		}
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
