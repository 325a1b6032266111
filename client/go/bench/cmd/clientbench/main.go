// Command clientbench is the Go client's mint, get, put and state get
// against a cluster, beside go-redis' SET EX and GET against a Redis, each
// with N goroutines calling at once for a while: what
// `target/release/goclient` runs (tests/bench/src/bin/goclient.rs), one
// JSON object per cell on stdout, as tests/python/client_bench.py prints
// them for the Python client and client/ts/bench/clientBench.ts for the
// TypeScript one.
//
//	go run ./cmd/clientbench --endpoints 127.0.0.1:7401,... \
//	    --redis redis://127.0.0.1:6379/ --tasks 1,64 --seconds 10
//
// (from client/go/bench, a module of its own so that go-redis stays out of
// the client's module graph).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/redis/go-redis/v9"
)

// value is a JSON string of 256 characters, as client_bench.py's.
var value = strings.Repeat("v", 256)

const (
	// preload is how many keys are written before a read workload, read
	// at random.
	preload = 1000
	// ttl is the minted handles' and SET EX keys' TTL.
	ttl = time.Hour
)

// op is one call; i is unique to the call within its cell.
type op func(ctx context.Context, i int) error

type namedOp struct {
	name string
	op   op
}

// cell is one line of output.
type cell struct {
	System      string  `json:"system"`
	Op          string  `json:"op"`
	Concurrency int     `json:"concurrency"`
	Ops         int     `json:"ops"`
	Errors      int     `json:"errors"`
	Seconds     float64 `json:"seconds"`
	Throughput  float64 `json:"throughput"`
	P50Us       int64   `json:"p50_us"`
	P99Us       int64   `json:"p99_us"`
	// ClientCPUUs is this process's CPU (user and system) per call that
	// succeeded, in µs: the client's own cost.
	ClientCPUUs float64 `json:"client_cpu_us"`
	FirstError  *string `json:"first_error"`
}

// cpuTime is the CPU (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// quantileUs is the q quantile of sorted latencies, in whole µs (0 if none).
func quantileUs(sorted []time.Duration, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	at := min(len(sorted)-1, int(q*float64(len(sorted))))
	return sorted[at].Microseconds()
}

// run has tasks goroutines loop on o for seconds: latencies of the calls
// that succeeded, errors counted (the first one kept).
func run(ctx context.Context, system, name string, o op, tasks int, seconds float64) cell {
	took := make([][]time.Duration, tasks)
	errs := make([]int, tasks)
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	cpu := cpuTime()
	end := start.Add(time.Duration(seconds * float64(time.Second)))
	for w := range tasks {
		wg.Go(func() {
			mine := make([]time.Duration, 0, 1<<14)
			for i := 0; ; i++ {
				t := time.Now()
				if !t.Before(end) {
					break
				}
				if err := o(ctx, w*1_000_000+i); err != nil {
					errs[w]++
					once.Do(func() { firstErr = err })
					continue
				}
				mine = append(mine, time.Since(t))
			}
			took[w] = mine
		})
	}
	wg.Wait()
	wall := time.Since(start).Seconds()
	used := cpuTime() - cpu
	all := slices.Concat(took...)
	slices.Sort(all)
	c := cell{
		System: system, Op: name, Concurrency: tasks, Ops: len(all), Seconds: wall,
		Throughput: float64(len(all)) / wall, P50Us: quantileUs(all, 0.5), P99Us: quantileUs(all, 0.99),
	}
	for _, n := range errs {
		c.Errors += n
	}
	if len(all) > 0 {
		c.ClientCPUUs = float64(used.Microseconds()) / float64(len(all))
	}
	if firstErr != nil {
		s := firstErr.Error()
		c.FirstError = &s
	}
	return c
}

// inBatches runs f on 0..n-1, width at a time.
func inBatches(n, width int, f func(i int) error) error {
	for start := 0; start < n; start += width {
		var wg sync.WaitGroup
		errs := make([]error, min(width, n-start))
		for j := range errs {
			wg.Go(func() { errs[j] = f(start + j) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

func handlestoreOps(ctx context.Context, endpoints string) ([]namedOp, func() error, error) {
	client, err := handlestore.New(handlestore.Config{Endpoints: strings.Split(endpoints, ","), Namespace: "bench"})
	if err != nil {
		return nil, nil, err
	}
	store, err := handlestore.NewHandleStore[string](client, "bench", handlestore.HandleStoreOptions{DefaultTTL: ttl})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	keys := make([]string, preload)
	if err := inBatches(preload, 100, func(i int) (err error) {
		keys[i], err = store.Mint(ctx, value, handlestore.TTLDefault)
		return err
	}); err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("preloading handles: %w", err)
	}
	tool := client.StateTool(handlestore.StateToolOptions{})
	names := make([]string, preload)
	for i := range names {
		names[i] = fmt.Sprintf("bench/read/%d", i)
	}
	for start := 0; start < preload; start += 100 {
		items := make([]handlestore.StoreItem, 0, 100)
		for _, k := range names[start:min(start+100, preload)] {
			items = append(items, handlestore.StoreItem{Key: k, Value: value})
		}
		if _, err := tool.BatchStore(ctx, items); err != nil {
			client.Close()
			return nil, nil, fmt.Errorf("preloading state keys: %w", err)
		}
	}
	ops := []namedOp{
		{"mint", func(ctx context.Context, _ int) error {
			_, err := store.Mint(ctx, value, handlestore.TTLDefault)
			return err
		}},
		{"get", func(ctx context.Context, _ int) error {
			_, ok, err := store.Get(ctx, keys[rand.IntN(len(keys))])
			if err == nil && !ok {
				err = errors.New("a preloaded handle is missing")
			}
			return err
		}},
		{"put", func(ctx context.Context, _ int) error {
			_, err := store.Put(ctx, keys[rand.IntN(len(keys))], value, handlestore.TTLDefault)
			return err
		}},
		{"state_get", func(ctx context.Context, _ int) error {
			var v string
			ok, err := tool.Get(ctx, names[rand.IntN(len(names))], &v)
			if err == nil && !ok {
				err = errors.New("a preloaded state key is missing")
			}
			return err
		}},
	}
	return ops, client.Close, nil
}

func redisOps(ctx context.Context, url string) ([]namedOp, func() error, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, err
	}
	// go-redis' own pool, as shipped (10 connections per GOMAXPROCS).
	r := redis.NewClient(opts)
	keys := make([]string, preload)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench:read:%d", i)
	}
	if err := inBatches(preload, 100, func(i int) error { return r.Set(ctx, keys[i], value, 0).Err() }); err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("preloading keys: %w", err)
	}
	ops := []namedOp{
		{"set_ex", func(ctx context.Context, i int) error {
			return r.Set(ctx, "bench:w:"+strconv.Itoa(i), value, ttl).Err()
		}},
		{"get", func(ctx context.Context, _ int) error {
			err := r.Get(ctx, keys[rand.IntN(len(keys))]).Err()
			if errors.Is(err, redis.Nil) {
				err = errors.New("a preloaded key is missing")
			}
			return err
		}},
	}
	return ops, r.Close, nil
}

func main() {
	endpoints := flag.String("endpoints", "", "handlestore endpoints, comma-separated")
	redisURL := flag.String("redis", "", "a Redis URL")
	tasksFlag := flag.String("tasks", "1,64", "concurrent goroutines per cell, comma-separated")
	seconds := flag.Float64("seconds", 10, "seconds per cell")
	flag.Parse()
	var levels []int
	for t := range strings.SplitSeq(*tasksFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "--tasks: %q is not a positive count\n", t)
			os.Exit(2)
		}
		levels = append(levels, n)
	}
	type system struct {
		name string
		open func(context.Context, string) ([]namedOp, func() error, error)
		arg  string
	}
	var systems []system
	if *endpoints != "" {
		systems = append(systems, system{"go-client", handlestoreOps, *endpoints})
	}
	if *redisURL != "" {
		systems = append(systems, system{"go-redis", redisOps, *redisURL})
	}
	ctx := context.Background()
	out := json.NewEncoder(os.Stdout)
	for _, s := range systems {
		ops, closeFn, err := s.open(ctx, s.arg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", s.name, err)
			os.Exit(1)
		}
		for _, o := range ops {
			for _, tasks := range levels {
				if err := out.Encode(run(ctx, s.name, o.name, o.op, tasks, *seconds)); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
			}
		}
		if err := closeFn(); err != nil {
			fmt.Fprintf(os.Stderr, "closing %s: %v\n", s.name, err)
			os.Exit(1)
		}
	}
}
