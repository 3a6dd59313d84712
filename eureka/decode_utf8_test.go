package eureka

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firstHighByte is the message naming the first non-ASCII byte of s, which
// in these tests is the bad one.
func firstHighByte(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return fmt.Sprintf("not valid UTF-8: byte 0x%02x at offset %d", s[i], i)
		}
	}
	return "no high byte"
}

// TestDecodeInvalidUTF8: a body read as UTF-8 that is not UTF-8 is
// ErrInvalidUTF8 (and so ErrBadBody), naming the first bad byte and its
// offset, in every decoder; bodies declared Latin-1 are transcoded instead.
func TestDecodeInvalidUTF8(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		bad                     bool
	}{
		{name: "JSON host name", contentType: "application/json", body: "{\"hostName\":\"h\xff\"}",
			bad: true},
		{name: "JSON key", contentType: "application/json", body: "{\"\xc3\":1}",
			bad: true},
		{name: "JSON labelled utf-8", contentType: "application/json; charset=utf-8", body: "{\"app\":\"\xed\xa0\x80\"}",
			bad: true}, // an encoded surrogate is not UTF-8
		{name: "JSON labelled latin-1 is transcoded", contentType: "application/json; charset=iso-8859-1", body: "{\"hostName\":\"h\xff\"}"},
		{name: "XML text", contentType: "application/xml", body: "<instance><hostName>h\xff</hostName></instance>",
			bad: true},
		{name: "XML attribute", contentType: "application/xml", body: "<instance><port enabled=\"\xfe\">1</port></instance>",
			bad: true},
		{name: "XML element name", contentType: "application/xml", body: "<instance><a\xff>1</a\xff></instance>",
			bad: true},
		{name: "XML comment", contentType: "application/xml", body: "<instance><!-- \xff --><hostName>h</hostName></instance>",
			bad: true},
		{name: "XML declared UTF-8", contentType: "application/xml", body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><instance><hostName>\xff</hostName></instance>",
			bad: true},
		{name: "XML declared US-ASCII", contentType: "application/xml", body: "<?xml version=\"1.0\" encoding=\"us-ascii\"?><instance><hostName>\xff</hostName></instance>",
			bad: true},
		{name: "XML declared latin-1 is transcoded", contentType: "application/xml",
			body: "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><instance><hostName>h\xff</hostName></instance>"},
		{name: "XML labelled latin-1 is transcoded", contentType: "application/xml; charset=latin1", body: "<instance><hostName>h\xff</hostName></instance>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst, err := DecodeInstance(tt.contentType, []byte(tt.body))
			if !tt.bad {
				require.NoError(t, err)
				assert.Equal(t, "hÿ", inst.HostName)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidUTF8)
			assert.ErrorIs(t, err, ErrBadBody)
			assert.Contains(t, err.Error(), firstHighByte(tt.body))
		})
	}

	t.Run("replication batch", func(t *testing.T) {
		body := "{\"replicationList\":[{\"appName\":\"A\",\"id\":\"i\xff\",\"action\":\"Cancel\"}]}"
		_, err := DecodeReplicationList([]byte(body))
		require.Error(t, err)
		assert.True(t, errors.Is(err, ErrInvalidUTF8), "%v", err)
		assert.Contains(t, err.Error(), firstHighByte(body))
	})
}

func TestCheckUTF8(t *testing.T) {
	assert.NoError(t, checkUTF8(nil))
	assert.NoError(t, checkUTF8([]byte("café 😀")))
	err := checkUTF8([]byte("ok\xe2\x82"))
	require.ErrorIs(t, err, ErrInvalidUTF8)
	assert.Equal(t, "eureka: cannot parse request body: not valid UTF-8: byte 0xe2 at offset 2", err.Error())
}
