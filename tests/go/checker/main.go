// Command checker verifies provledger checkpoints, cosignatures and Merkle proofs with
// code provledger did not write: golang.org/x/mod/sumdb/note (signed notes, Ed25519 log
// signatures) and golang.org/x/mod/sumdb/tlog (RFC 6962 hashes, inclusion and consistency
// proofs). The x/mod version in Debian has no C2SP tlog-cosignature/v1 verifier, so
// cosigVerifier below implements one over crypto/ed25519 straight from the spec
// (c2sp.org/tlog-cosignature) and plugs it into note.Open.
//
// Input (JSON on stdin):
//
//	{"log_key": "<vkey>", "witness_keys": ["<vkey, type 0x04>"], "quorum": N,
//	 "note": "<checkpoint note with cosignature lines>",
//	 "inclusion": [{"index": i, "leaf": "<base64 leaf bytes>", "proof": ["<base64>"]}],
//	 "consistency": [{"old_size": m, "old_root": "<base64>", "proof": ["<base64>"]}]}
//
// Output: one JSON object on stdout; exit status 0 when everything verifies, 1 otherwise.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type inclusion struct {
	Index int64    `json:"index"`
	Leaf  string   `json:"leaf"`
	Proof []string `json:"proof"`
}

type consistency struct {
	OldSize int64    `json:"old_size"`
	OldRoot string   `json:"old_root"`
	Proof   []string `json:"proof"`
}

type input struct {
	LogKey      string        `json:"log_key"`
	WitnessKeys []string      `json:"witness_keys"`
	Quorum      int           `json:"quorum"`
	Note        string        `json:"note"`
	Inclusion   []inclusion   `json:"inclusion"`
	Consistency []consistency `json:"consistency"`
}

type output struct {
	OK          bool     `json:"ok"`
	Error       string   `json:"error,omitempty"`
	Origin      string   `json:"origin,omitempty"`
	Size        int64    `json:"size"`
	Root        string   `json:"root,omitempty"`
	LogSigned   bool     `json:"log_signed"`
	Cosigners   []string `json:"cosigners"`
	Inclusion   int      `json:"inclusion_verified"`
	Consistency int      `json:"consistency_verified"`
}

// cosigVerifier is a note.Verifier for Ed25519 cosignature/v1 (key type 0x04).
type cosigVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosigVerifier) Name() string    { return v.name }
func (v *cosigVerifier) KeyHash() uint32 { return v.hash }

// Verify checks sig = u64 big-endian timestamp || Ed25519 signature over
// "cosignature/v1\ntime <timestamp>\n" || msg (the whole note body).
func (v *cosigVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	if t > 1<<63-1 {
		return false
	}
	signed := append([]byte("cosignature/v1\ntime "+strconv.FormatUint(t, 10)+"\n"), msg...)
	return ed25519.Verify(v.key, signed, sig[8:])
}

func newCosigVerifier(vkey string) (*cosigVerifier, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return nil, errors.New("witness key: want name+hash+key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 33 || raw[0] != 0x04 {
		return nil, errors.New("witness key: want base64 of 0x04 || 32-byte Ed25519 key")
	}
	h := sha256.Sum256(append([]byte(parts[0]+"\n"), raw...))
	hash := binary.BigEndian.Uint32(h[:4])
	if fmt.Sprintf("%08x", hash) != parts[1] {
		return nil, fmt.Errorf("witness key: key hash %s, computed %08x", parts[1], hash)
	}
	return &cosigVerifier{name: parts[0], hash: hash, key: ed25519.PublicKey(raw[1:])}, nil
}

func decodeHashes(list []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, 0, len(list))
	for _, s := range list {
		h, err := tlog.ParseHash(s)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// parseCheckpoint reads origin, size and root from a C2SP checkpoint body.
func parseCheckpoint(text string) (string, int64, tlog.Hash, error) {
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 {
		return "", 0, tlog.Hash{}, errors.New("checkpoint: want origin, size, root lines")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return "", 0, tlog.Hash{}, fmt.Errorf("checkpoint size %q", lines[1])
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		return "", 0, tlog.Hash{}, fmt.Errorf("checkpoint root: %v", err)
	}
	return lines[0], size, root, nil
}

func run(in input, out *output) error {
	logVerifier, err := note.NewVerifier(in.LogKey)
	if err != nil {
		return fmt.Errorf("log key: %v", err)
	}
	verifiers := []note.Verifier{logVerifier}
	for _, k := range in.WitnessKeys {
		v, err := newCosigVerifier(k)
		if err != nil {
			return err
		}
		verifiers = append(verifiers, v)
	}
	n, err := note.Open([]byte(in.Note), note.VerifierList(verifiers...))
	if err != nil {
		return fmt.Errorf("note.Open: %v", err)
	}
	for _, sig := range n.Sigs {
		if sig.Name == logVerifier.Name() && sig.Hash == logVerifier.KeyHash() {
			out.LogSigned = true
		} else {
			out.Cosigners = append(out.Cosigners, fmt.Sprintf("%s+%08x", sig.Name, sig.Hash))
		}
	}
	if !out.LogSigned {
		return errors.New("note: no signature by the log key")
	}
	if len(out.Cosigners) < in.Quorum {
		return fmt.Errorf("cosignatures: %d verified, quorum %d", len(out.Cosigners), in.Quorum)
	}
	origin, size, root, err := parseCheckpoint(n.Text)
	if err != nil {
		return err
	}
	if origin != logVerifier.Name() {
		return fmt.Errorf("origin %q is not the log key name %q", origin, logVerifier.Name())
	}
	out.Origin, out.Size, out.Root = origin, size, root.String()
	for i, p := range in.Inclusion {
		leaf, err := base64.StdEncoding.DecodeString(p.Leaf)
		if err != nil {
			return fmt.Errorf("inclusion %d leaf: %v", i, err)
		}
		proof, err := decodeHashes(p.Proof)
		if err != nil {
			return fmt.Errorf("inclusion %d proof: %v", i, err)
		}
		if err := tlog.CheckRecord(tlog.RecordProof(proof), size, root, p.Index, tlog.RecordHash(leaf)); err != nil {
			return fmt.Errorf("inclusion %d (index %d): %v", i, p.Index, err)
		}
		out.Inclusion++
	}
	for i, p := range in.Consistency {
		old, err := tlog.ParseHash(p.OldRoot)
		if err != nil {
			return fmt.Errorf("consistency %d old root: %v", i, err)
		}
		proof, err := decodeHashes(p.Proof)
		if err != nil {
			return fmt.Errorf("consistency %d proof: %v", i, err)
		}
		if err := tlog.CheckTree(tlog.TreeProof(proof), size, root, p.OldSize, old); err != nil {
			return fmt.Errorf("consistency %d (%d -> %d): %v", i, p.OldSize, size, err)
		}
		out.Consistency++
	}
	return nil
}

func main() {
	var in input
	dec := json.NewDecoder(os.Stdin)
	dec.DisallowUnknownFields()
	out := output{Cosigners: []string{}}
	if err := dec.Decode(&in); err != nil {
		out.Error = "input: " + err.Error()
	} else if err := run(in, &out); err != nil {
		out.Error = err.Error()
	} else {
		out.OK = true
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
	os.Stdout.Write(buf.Bytes())
	if !out.OK {
		os.Exit(1)
	}
}
