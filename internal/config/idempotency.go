package config

import "time"

// Idempotency says how answers are kept per Idempotency-Key: a request
// that carries one is remembered, a duplicate replayed from the kept
// answer instead of being sent (and billed) again.
type Idempotency struct {
	// Enabled keeps and replays answers. Default true; with false the
	// header only lets a call be retried, as before.
	Enabled bool `yaml:"enabled"`

	// TTL is how long an answer is kept. Default 24h: longer than any
	// restart delay of the agents that send the key.
	TTL time.Duration `yaml:"ttl"`

	// MaxAnswer is the largest answer kept, in bytes: a larger one is
	// relayed, not kept. Default 8 MiB.
	MaxAnswer int64 `yaml:"max_answer,size"`

	// MaxBytes bounds the kept answers together; past it the oldest are
	// dropped first, never an in-flight mark. Default 512 MiB.
	MaxBytes int64 `yaml:"max_bytes,size"`

	// FinishOnDisconnect makes a call with a key finish (within its
	// policy's total) and keep its answer when its client leaves, so that
	// the client's retry after a restart gets it at no cost. Default
	// true; without a key a client that leaves cancels its call at once.
	FinishOnDisconnect bool `yaml:"finish_on_disconnect"`
}

// defaultIdempotency is the section's default.
func defaultIdempotency() Idempotency {
	return Idempotency{Enabled: true, TTL: 24 * time.Hour, MaxAnswer: 8 << 20, MaxBytes: 512 << 20, FinishOnDisconnect: true}
}

func (c *Config) checkIdempotency() error {
	id := c.Idempotency
	switch {
	case id.TTL <= 0:
		return errf("idempotency.ttl", "%s: give a positive duration (default 24h)", id.TTL)
	case id.MaxAnswer <= 0:
		return errf("idempotency.max_answer", "%d: give a positive size (default 8MiB)", id.MaxAnswer)
	case id.MaxBytes < id.MaxAnswer:
		return errf("idempotency.max_bytes", "%d is less than max_answer %d: give at least that (default 512MiB)", id.MaxBytes, id.MaxAnswer)
	}
	return nil
}
