package config

import (
	"cmp"
	"time"
)

// Idempotency says how answers are kept per Idempotency-Key, so that a
// duplicate is replayed instead of sent (and billed) again.
type Idempotency struct {
	// Enabled keeps and replays answers. Default true; with false the
	// header only lets a call be retried.
	Enabled bool `yaml:"enabled"`

	// TTL is how long an answer is kept. Default 24h: longer than any
	// restart delay of the agents that send the key.
	TTL time.Duration `yaml:"ttl"`

	// MaxAnswer is the largest answer kept, in bytes. Default 8 MiB.
	MaxAnswer int64 `yaml:"max_answer,size"`

	// MaxBytes bounds the kept answers together. Default 512 MiB.
	MaxBytes int64 `yaml:"max_bytes,size"`

	// FinishOnDisconnect finishes a call with a key whose client leaves,
	// and keeps its answer. Default true.
	FinishOnDisconnect bool `yaml:"finish_on_disconnect"`
}

func (c *Config) checkIdempotency() error {
	id := c.Idempotency
	return cmp.Or(refuse(id.TTL <= 0, "idempotency.ttl", "%s: give a positive duration (default 24h)", id.TTL),
		refuse(id.MaxAnswer <= 0, "idempotency.max_answer", "%d: give a positive size (default 8MiB)", id.MaxAnswer),
		refuse(id.MaxBytes < id.MaxAnswer, "idempotency.max_bytes",
			"%d is less than max_answer %d: give at least that (default 512MiB)", id.MaxBytes, id.MaxAnswer))
}
