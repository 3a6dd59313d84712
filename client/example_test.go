package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/heureka/heureka/client"
)

// The example of docs/go-client.md: register this process, keep it
// registered until SIGINT or SIGTERM, and print the instances of another
// application whenever they change.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := client.DefaultConfig()
	cfg.ServerURLs = []string{"http://heureka-1:8761/eureka/", "http://heureka-2:8761/eureka/"}
	cfg.Instance.App = "orders"
	cfg.Instance.InstanceID = "orders-host-1:8080"
	cfg.Instance.HostName = "orders-host-1"
	cfg.Instance.IPAddr = "10.0.0.11"
	cfg.Instance.Port = 8080
	cfg.Instance.Metadata = map[string]string{"version": "1.4.2"}

	c, err := client.New(cfg)
	if err != nil {
		log.Fatal(err) // an invalid Config
	}

	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }() // register, renew; cancel when ctx ends

	for instances := range c.Watch(ctx, "payments") { // closed when ctx ends
		for _, in := range instances {
			if in.Status == client.StatusUp {
				fmt.Printf("payments at %s:%d\n", in.IPAddr, in.Port)
			}
		}
	}
	if err := <-done; err != nil {
		log.Printf("cancelling the registration: %v", err)
	}
}
