//go:build linux

package state

import "testing"

func TestNetworkFSDetected(t *testing.T) {
	tests := []struct {
		magic uint32
		want  string
	}{
		{0x6969, "NFS"}, {0xFF534D42, "CIFS"}, {0x517B, "SMB"}, {0xFE534D42, "SMB2"},
		{0xEF53, ""}, {0x01021994, ""}, {0x9123683E, ""}, // ext4, tmpfs, btrfs
	}
	for _, tt := range tests {
		if got := networkFS(tt.magic); got != tt.want {
			t.Errorf("networkFS(%#x) = %q, want %q", tt.magic, got, tt.want)
		}
	}
}
