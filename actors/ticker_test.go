package actors

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type testTick struct{}

// tickingActor starts a ticker on Started and stops it on Stopping, like the
// evictor and the self-preservation actor.
type tickingActor struct {
	interval time.Duration
	ticks    *atomic.Int64
	tk       *ticker
}

func (a *tickingActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		a.tk = startTicker(ctx, a.interval, &testTick{})
	case *actor.Stopping:
		a.tk.stop()
	case *testTick:
		a.ticks.Add(1)
	}
}

// A tick racing with stop must not reach the stopped actor: it would be a
// dead letter, whose logging throttle keeps a goroutine alive after Close.
func TestTickerNoTickAfterStop(t *testing.T) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer system.Shutdown()
	var deadTicks atomic.Int64
	sub := system.EventStream.Subscribe(func(msg any) {
		if dl, ok := msg.(*actor.DeadLetterEvent); ok {
			if _, ok := dl.Message.(*testTick); ok {
				deadTicks.Add(1)
			}
		}
	})
	defer system.EventStream.Unsubscribe(sub)

	var ticks atomic.Int64
	for i := 0; i < 300; i++ {
		pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &tickingActor{interval: 50 * time.Microsecond, ticks: &ticks}
		}))
		if i%10 == 0 {
			before := ticks.Load()
			require.Eventually(t, func() bool { return ticks.Load() > before }, 10*time.Second, time.Millisecond)
		}
		require.NoError(t, system.Root.PoisonFuture(pid).Wait())
	}
	assert.Positive(t, ticks.Load())
	assert.Zero(t, deadTicks.Load(), "ticks delivered after stop")
}

func TestTickerNonPositiveIntervalNeverTicks(t *testing.T) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer system.Shutdown()
	var ticks atomic.Int64
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &tickingActor{interval: 0, ticks: &ticks}
	}))
	assert.Never(t, func() bool { return ticks.Load() > 0 }, 50*time.Millisecond, 5*time.Millisecond)
	require.NoError(t, system.Root.PoisonFuture(pid).Wait())
}
