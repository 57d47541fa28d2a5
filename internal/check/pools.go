package check

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/keypool"
	limitstore "github.com/sluice-llm/sluice/limit"
)

// poolRow is one key of a provider's pool (api_keys_env), named by its
// short hash, never by the key.
type poolRow struct {
	Provider string `json:"provider"`
	Env      string `json:"env"`
	Hash     string `json:"hash"`
	Weight   int    `json:"weight"`
	Share    int    `json:"share_percent"` // of the provider's calls while every key is ready
}

// poolRows lists the keys of every pool, read from the environment as
// serve reads them (serveRefuses has already refused an empty variable).
func poolRows(c *config.Config) ([]poolRow, error) {
	pools, err := keypool.New(c.Providers, os.Getenv, limitstore.NewMemory(), keypool.Events{})
	if err != nil {
		return nil, err
	}
	var out []poolRow
	total := map[string]int{}
	views := pools.Views(time.Now())
	for _, v := range views {
		total[v.Provider] += v.Weight
	}
	for _, v := range views {
		out = append(out, poolRow{Provider: v.Provider, Env: v.Env, Hash: v.Hash, Weight: v.Weight,
			Share: (100*v.Weight + total[v.Provider]/2) / total[v.Provider]})
	}
	return out, nil
}

// poolsTable prints the pools, when the config has any.
func (r *report) poolsTable(w io.Writer) {
	if len(r.Pools) == 0 {
		return
	}
	fmt.Fprintln(w, "\nKey pools: each attempt takes the next key neither paused (rate limit) nor out (quota), by weight; `sluice keys` shows their state")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROVIDER\tENV\tKEY\tWEIGHT\tSHARE")
	for _, x := range r.Pools {
		fmt.Fprintf(tw, "  %s\t$%s\t%s\t%d\t%d%%\n", x.Provider, x.Env, x.Hash, x.Weight, x.Share)
	}
	tw.Flush()
}
