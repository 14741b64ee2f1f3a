// Package azfilesfake is an in-process fake of the Azure Files REST API,
// for tests. No Azure Files emulator exists (Azurite has Blob, Queue and
// Table only), so bench's AzureFileShareService is tested against this
// server, which implements the calls the service makes:
//
//   - shares: create, get properties, delete;
//   - directories: create, get properties, list (XML, with paging), delete;
//   - files: create, put range (update and clear), get properties, get
//     (whole or ranged), delete.
//
// Every request is authenticated as Azure does it: a SharedKey signature
// computed with the account key, a service or account SAS signed with it
// (validity window, protocol, resource type and permissions checked), or
// a bearer token over HTTPS with the backup request intent. A wrong key,
// token or signature is refused with 403 AuthenticationFailed.
//
// Paths are IP-style, as with Azure's emulators:
// http://127.0.0.1:PORT/ACCOUNT/SHARE/dir/file.
package azfilesfake

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a fake server.
type Options struct {
	// Account is the storage account name (default "devstoreaccount1").
	Account string
	// Key is the account key, base64 (default: 64 random bytes).
	Key string
	// Token, when set, is a bearer token the server accepts (with TLS).
	Token string
	// TLS serves HTTPS (with httptest's certificate; use Server.Client).
	TLS bool
}

// Server is a running fake. Close it when done.
type Server struct {
	srv     *httptest.Server
	account string
	key     []byte
	keyB64  string
	token   string

	mu     sync.Mutex
	shares map[string]*node
	ops    map[string]int
	seq    int
}

type node struct {
	dir      bool
	children map[string]*node // dir only
	data     []byte           // file only
	modified time.Time
	etag     string
}

func newDir() *node {
	return &node{dir: true, children: map[string]*node{}, modified: time.Now().UTC()}
}

// New starts a fake server.
func New(opts Options) (*Server, error) {
	s := &Server{account: opts.Account, token: opts.Token, shares: map[string]*node{}, ops: map[string]int{}}
	if s.account == "" {
		s.account = "devstoreaccount1"
	}
	if opts.Key == "" {
		k := make([]byte, 64)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		opts.Key = base64.StdEncoding.EncodeToString(k)
	}
	key, err := base64.StdEncoding.DecodeString(opts.Key)
	if err != nil {
		return nil, fmt.Errorf("azfilesfake: the account key is not base64: %w", err)
	}
	s.key, s.keyB64 = key, opts.Key
	if opts.TLS {
		s.srv = httptest.NewTLSServer(s)
	} else {
		s.srv = httptest.NewServer(s)
	}
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Endpoint is the file service URL of the account, e.g.
// http://127.0.0.1:PORT/devstoreaccount1.
func (s *Server) Endpoint() string { return s.srv.URL + "/" + s.account }

// Account is the storage account name.
func (s *Server) Account() string { return s.account }

// Key is the account key (base64).
func (s *Server) Key() string { return s.keyB64 }

// Client returns an HTTP client that trusts the server (for TLS).
func (s *Server) Client() *http.Client { return s.srv.Client() }

// CreateShare makes an empty share (as PUT ?restype=share would).
func (s *Server) CreateShare(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.shares[name]; !ok {
		s.shares[name] = newDir()
	}
}

// Ops returns how many requests of each operation succeeded, e.g.
// "PutRange": 3.
func (s *Server) Ops() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.ops))
	for k, v := range s.ops {
		out[k] = v
	}
	return out
}

// Tree returns the share's content: file path -> bytes, and each empty
// directory as "path/" -> nil. It reports false when the share does not
// exist.
func (s *Server) Tree(share string) (map[string][]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	root, ok := s.shares[share]
	if !ok {
		return nil, false
	}
	out := map[string][]byte{}
	var walk func(prefix string, n *node)
	walk = func(prefix string, n *node) {
		if len(n.children) == 0 && prefix != "" {
			out[prefix+"/"] = nil
		}
		for name, c := range n.children {
			p := name
			if prefix != "" {
				p = prefix + "/" + name
			}
			if c.dir {
				walk(p, c)
			} else {
				out[p] = append([]byte{}, c.data...)
			}
		}
	}
	walk("", root)
	return out, true
}

// apiError is an Azure Storage error response.
type apiError struct {
	status int
	code   string
	msg    string
}

func fail(status int, code, msg string) *apiError { return &apiError{status, code, msg} }

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *apiError) {
	w.Header().Set("x-ms-error-code", e.code)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(e.status)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, e.code, xmlEscape(e.msg))
	}
}

func xmlEscape(v string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(v))
	return b.String()
}

// request is a parsed request.
type request struct {
	share string
	path  []string // below the share
	op    string
	need  access
}

// route names the operation and what it needs.
func route(r *http.Request, share string, path []string) (request, *apiError) {
	q := r.URL.Query()
	restype, comp := q.Get("restype"), q.Get("comp")
	rq := request{share: share, path: path}
	res := share
	if len(path) > 0 {
		res += "/" + strings.Join(path, "/")
	}
	rq.need.resource = res
	set := func(op string, perm, level byte) { rq.op, rq.need.perm, rq.need.level = op, perm, level }
	m := r.Method
	switch {
	case restype == "share" && len(path) == 0:
		switch {
		case m == http.MethodPut && comp == "":
			set("CreateShare", 'c', 'c')
		case (m == http.MethodGet || m == http.MethodHead) && comp == "":
			set("GetShareProperties", 'r', 'c')
		case m == http.MethodDelete && comp == "":
			set("DeleteShare", 'd', 'c')
		}
	case restype == "directory":
		switch {
		case m == http.MethodPut && comp == "" && len(path) > 0:
			set("CreateDirectory", 'c', 'o')
		case (m == http.MethodGet || m == http.MethodHead) && comp == "":
			set("GetDirectoryProperties", 'r', 'o')
		case m == http.MethodGet && comp == "list":
			set("ListDirectory", 'l', 'o')
		case m == http.MethodDelete && comp == "" && len(path) > 0:
			set("DeleteDirectory", 'd', 'o')
		}
	case restype == "" && len(path) > 0:
		switch {
		case m == http.MethodPut && comp == "" && strings.EqualFold(r.Header.Get("x-ms-type"), "file"):
			set("CreateFile", 'c', 'o')
		case m == http.MethodPut && comp == "range":
			set("PutRange", 'w', 'o')
		case m == http.MethodHead && comp == "":
			set("GetFileProperties", 'r', 'o')
		case m == http.MethodGet && comp == "":
			set("GetFile", 'r', 'o')
		case m == http.MethodDelete && comp == "":
			set("DeleteFile", 'd', 'o')
		}
	}
	if rq.op == "" {
		return rq, fail(http.StatusBadRequest, "UnsupportedHttpVerb", fmt.Sprintf("the fake does not implement %s with restype=%q comp=%q", m, restype, comp))
	}
	return rq, nil
}

// ServeHTTP handles one REST call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seq++
	reqID := fmt.Sprintf("fake-%08d", s.seq)
	s.mu.Unlock()
	w.Header().Set("x-ms-request-id", reqID)
	if v := r.Header.Get("x-ms-version"); v != "" {
		w.Header().Set("x-ms-version", v)
	}
	w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))

	// /account/share/dir/file (r.URL.Path is unescaped).
	segs := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(segs) < 2 || segs[0] != s.account || segs[1] == "" {
		s.writeError(w, r, fail(http.StatusBadRequest, "InvalidUri", "the fake serves /"+s.account+"/SHARE/... only"))
		return
	}
	var path []string
	for _, p := range segs[2:] {
		if p == "" {
			continue
		}
		if p == "." || p == ".." {
			s.writeError(w, r, fail(http.StatusBadRequest, "InvalidResourceName", "path segments . and .. are not allowed"))
			return
		}
		path = append(path, p)
	}
	rq, apiErr := route(r, segs[1], path)
	if apiErr != nil {
		s.writeError(w, r, apiErr)
		return
	}
	if err := s.authenticate(r, rq.need); err != nil {
		ae := err.(*errAuth)
		s.writeError(w, r, fail(ae.status, ae.code, ae.msg))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.writeError(w, r, fail(http.StatusBadRequest, "InvalidInput", "reading the body failed"))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if apiErr := s.handle(w, r, rq, body); apiErr != nil {
		s.writeError(w, r, apiErr)
		return
	}
	s.ops[rq.op]++
}

// lookup walks to the node at path in the share. parentOK reports whether
// every parent exists and is a directory.
func (s *Server) lookup(share string, path []string) (n, parent *node, parentOK bool, e *apiError) {
	root, ok := s.shares[share]
	if !ok {
		return nil, nil, false, fail(http.StatusNotFound, "ShareNotFound", "the share does not exist")
	}
	cur := root
	for i, p := range path {
		if !cur.dir {
			return nil, nil, false, nil
		}
		next, ok := cur.children[p]
		if !ok {
			if i == len(path)-1 {
				return nil, cur, true, nil
			}
			return nil, nil, false, nil
		}
		if i == len(path)-1 {
			return next, cur, true, nil
		}
		cur = next
	}
	return root, nil, true, nil
}

func (s *Server) touch(w http.ResponseWriter, n *node) {
	n.modified = time.Now().UTC()
	s.seq++
	n.etag = fmt.Sprintf(`"0x8D%014X"`, s.seq)
	setNodeHeaders(w, n)
}

func setNodeHeaders(w http.ResponseWriter, n *node) {
	if n.etag != "" {
		w.Header().Set("ETag", n.etag)
	}
	w.Header().Set("Last-Modified", n.modified.Format(http.TimeFormat))
}

var (
	errParentNotFound = fail(http.StatusNotFound, "ParentNotFound", "the parent directory does not exist")
	errNotFound       = fail(http.StatusNotFound, "ResourceNotFound", "the specified resource does not exist")
	errTypeMismatch   = fail(http.StatusConflict, "ResourceTypeMismatch", "the resource is of another type (file or directory)")
)

func (s *Server) handle(w http.ResponseWriter, r *http.Request, rq request, body []byte) *apiError {
	switch rq.op {
	case "CreateShare":
		if _, ok := s.shares[rq.share]; ok {
			return fail(http.StatusConflict, "ShareAlreadyExists", "the share already exists")
		}
		n := newDir()
		s.shares[rq.share] = n
		s.touch(w, n)
		w.WriteHeader(http.StatusCreated)
		return nil
	case "DeleteShare":
		if _, ok := s.shares[rq.share]; !ok {
			return fail(http.StatusNotFound, "ShareNotFound", "the share does not exist")
		}
		delete(s.shares, rq.share)
		w.WriteHeader(http.StatusAccepted)
		return nil
	}

	n, parent, parentOK, e := s.lookup(rq.share, rq.path)
	if e != nil {
		return e
	}
	switch rq.op {
	case "GetShareProperties":
		setNodeHeaders(w, n)
		w.Header().Set("x-ms-share-quota", "5120")
		w.WriteHeader(http.StatusOK)
	case "CreateDirectory":
		switch {
		case !parentOK:
			return errParentNotFound
		case n != nil:
			return fail(http.StatusConflict, "ResourceAlreadyExists", "the specified resource already exists")
		}
		d := newDir()
		parent.children[rq.path[len(rq.path)-1]] = d
		s.touch(w, d)
		w.WriteHeader(http.StatusCreated)
	case "GetDirectoryProperties":
		switch {
		case !parentOK:
			return errParentNotFound
		case n == nil:
			return errNotFound
		case !n.dir:
			return errTypeMismatch
		}
		setNodeHeaders(w, n)
		w.WriteHeader(http.StatusOK)
	case "ListDirectory":
		switch {
		case !parentOK:
			return errParentNotFound
		case n == nil:
			return errNotFound
		case !n.dir:
			return errTypeMismatch
		}
		return s.list(w, r, rq, n)
	case "DeleteDirectory":
		switch {
		case !parentOK:
			return errParentNotFound
		case n == nil:
			return errNotFound
		case !n.dir:
			return errTypeMismatch
		case len(n.children) > 0:
			return fail(http.StatusConflict, "DirectoryNotEmpty", "the directory is not empty")
		}
		delete(parent.children, rq.path[len(rq.path)-1])
		w.WriteHeader(http.StatusAccepted)
	case "CreateFile":
		size, err := strconv.ParseInt(r.Header.Get("x-ms-content-length"), 10, 64)
		switch {
		case err != nil || size < 0 || size > 4<<40:
			return fail(http.StatusBadRequest, "InvalidHeaderValue", "x-ms-content-length is missing or invalid")
		case size > 1<<30:
			return fail(http.StatusBadRequest, "InvalidHeaderValue", "the fake keeps files in memory and takes at most 1 GiB")
		case !parentOK:
			return errParentNotFound
		case n != nil && n.dir:
			return errTypeMismatch
		}
		f := &node{data: make([]byte, size)}
		parent.children[rq.path[len(rq.path)-1]] = f
		s.touch(w, f)
		w.WriteHeader(http.StatusCreated)
	case "PutRange":
		switch {
		case !parentOK:
			return errParentNotFound
		case n == nil:
			return errNotFound
		case n.dir:
			return errTypeMismatch
		}
		start, end, ok := parseRange(rangeHeader(r))
		if !ok || end >= int64(len(n.data)) {
			return fail(http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "the range is missing or beyond the end of the file")
		}
		switch strings.ToLower(r.Header.Get("x-ms-write")) {
		case "update":
			if int64(len(body)) != end-start+1 {
				return fail(http.StatusBadRequest, "InvalidHeaderValue", "the body length does not match the range")
			}
			if m := r.Header.Get("Content-MD5"); m != "" {
				sum := md5.Sum(body)
				if m != base64.StdEncoding.EncodeToString(sum[:]) {
					return fail(http.StatusBadRequest, "Md5Mismatch", "the body does not match Content-MD5")
				}
			}
			copy(n.data[start:], body)
		case "clear":
			clear(n.data[start : end+1])
		default:
			return fail(http.StatusBadRequest, "InvalidHeaderValue", "x-ms-write must be update or clear")
		}
		s.touch(w, n)
		w.WriteHeader(http.StatusCreated)
	case "GetFileProperties", "GetFile":
		switch {
		case !parentOK:
			return errParentNotFound
		case n == nil:
			return errNotFound
		case n.dir:
			return errTypeMismatch
		}
		setNodeHeaders(w, n)
		w.Header().Set("x-ms-type", "File")
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Accept-Ranges", "bytes")
		if rq.op == "GetFileProperties" {
			w.Header().Set("Content-Length", strconv.Itoa(len(n.data)))
			w.WriteHeader(http.StatusOK)
			return nil
		}
		data, status := n.data, http.StatusOK
		if rh := rangeHeader(r); rh != "" {
			start, end, ok := parseRange(rh)
			if !ok || start >= int64(len(n.data)) {
				return fail(http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "the range is beyond the end of the file")
			}
			end = min(end, int64(len(n.data))-1)
			data, status = n.data[start:end+1], http.StatusPartialContent
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, len(n.data)))
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(status)
		_, _ = w.Write(data)
	case "DeleteFile":
		switch {
		case !parentOK:
			return errParentNotFound
		case n == nil:
			return errNotFound
		case n.dir:
			return errTypeMismatch
		}
		delete(parent.children, rq.path[len(rq.path)-1])
		w.WriteHeader(http.StatusAccepted)
	}
	return nil
}

func rangeHeader(r *http.Request) string {
	if v := r.Header.Get("x-ms-range"); v != "" {
		return v
	}
	return r.Header.Get("Range")
}

// parseRange parses "bytes=START-END" (END inclusive; "bytes=START-" runs
// to the end).
func parseRange(v string) (start, end int64, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(spec, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	if b == "" {
		return start, 1<<62 - 1, true
	}
	end, err = strconv.ParseInt(b, 10, 64)
	if err != nil || end < start {
		return 0, 0, false
	}
	return start, end, true
}

// The list response, as the REST API documents it.
type listResult struct {
	XMLName         xml.Name    `xml:"EnumerationResults"`
	ServiceEndpoint string      `xml:"ServiceEndpoint,attr"`
	ShareName       string      `xml:"ShareName,attr"`
	DirectoryPath   string      `xml:"DirectoryPath,attr"`
	Marker          string      `xml:"Marker,omitempty"`
	Prefix          string      `xml:"Prefix"`
	MaxResults      int         `xml:"MaxResults,omitempty"`
	Entries         listEntries `xml:"Entries"`
	NextMarker      string      `xml:"NextMarker"`
}

type listEntries struct {
	Items []any
}

type listFile struct {
	XMLName    xml.Name `xml:"File"`
	Name       string   `xml:"Name"`
	Properties struct {
		ContentLength int64 `xml:"Content-Length"`
	} `xml:"Properties"`
}

type listDir struct {
	XMLName    xml.Name `xml:"Directory"`
	Name       string   `xml:"Name"`
	Properties struct{} `xml:"Properties"`
}

func (e listEntries) MarshalXML(enc *xml.Encoder, start xml.StartElement) error {
	if err := enc.EncodeToken(start); err != nil {
		return err
	}
	for _, it := range e.Items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return enc.EncodeToken(start.End())
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, rq request, dir *node) *apiError {
	q := r.URL.Query()
	maxResults := 5000
	if v := q.Get("maxresults"); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m < 1 {
			return fail(http.StatusBadRequest, "OutOfRangeQueryParameterValue", "maxresults must be a positive integer")
		}
		maxResults = min(m, 5000)
	}
	prefix, marker := q.Get("prefix"), q.Get("marker")
	names := make([]string, 0, len(dir.children))
	for name := range dir.children {
		if strings.HasPrefix(name, prefix) && name >= marker {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	res := listResult{
		ServiceEndpoint: "http://" + r.Host + "/" + s.account + "/",
		ShareName:       rq.share,
		DirectoryPath:   strings.Join(rq.path, "/"),
		Marker:          marker,
		Prefix:          prefix,
	}
	if q.Get("maxresults") != "" {
		res.MaxResults = maxResults
	}
	if len(names) > maxResults {
		res.NextMarker = names[maxResults]
		names = names[:maxResults]
	}
	for _, name := range names {
		c := dir.children[name]
		if c.dir {
			res.Entries.Items = append(res.Entries.Items, listDir{Name: name})
		} else {
			f := listFile{Name: name}
			f.Properties.ContentLength = int64(len(c.data))
			res.Entries.Items = append(res.Entries.Items, f)
		}
	}
	out, err := xml.Marshal(res)
	if err != nil {
		return fail(http.StatusInternalServerError, "InternalError", err.Error())
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, xml.Header)
	_, _ = w.Write(out)
	return nil
}
