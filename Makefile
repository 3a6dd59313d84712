# Heureka build targets. `make test` is what CI runs (see .ci/run).
GO       ?= go
PKGS     ?= ./...
BENCHOUT ?= /tmp/heureka-bench.out

.PHONY: all build run test test-short vet fmt lint tidy bench bench-report fuzz clientdeps testdeps sim clean

all: build

# The commit goes into the binary at link time (the toolchain's own VCS stamp
# may be turned off with GOFLAGS=-buildvcs=false); RELEASE names the release.
RELEASE ?=
BUILDINFO = github.com/heureka/heureka/internal/buildinfo
LDFLAGS  = -X $(BUILDINFO).Commit=$(shell git rev-parse HEAD 2>/dev/null)$(if $(RELEASE), -X $(BUILDINFO).Release=$(RELEASE))

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/heureka ./cmd/heureka

## run: start one node on the embedded defaults (HTTP :8761, Eureka API at /eureka/).
run:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/heureka

## clientdeps: install the pinned npm packages used by the JavaScript client tests.
clientdeps:
	cd clients/js && npm ci --no-audit --no-fund

## testdeps: install Debian's chromium, which the dashboard's browser test drives, when
## /usr/bin/chromium is missing (apt-get, as root or through sudo).
testdeps:
	@if [ ! -x /usr/bin/chromium ]; then \
		sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		echo "installing chromium for the dashboard's browser test"; \
		$$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	fi

## javadeps: fetch the Maven dependencies of the Java client tests (clients/java) into ~/.m2 and
## build the reference Eureka server (clients/java/reference/target/reference-server.jar) by
## running their build once (its tests skip without the nodes); then build the Spring Cloud starter
## (clients/spring-starter) and install it into ~/.m2 the same way. go test then runs Maven offline.
.PHONY: javadeps
javadeps:
	cd clients/java && mvn -B -ntp -q package
	cd clients/spring-starter && mvn -B -ntp -q install

## test: install the JS client packages and chromium, vet, then every test with the race detector.
## The in-process simulations (package simulations, whose scenarios are judged against time bounds)
## run after the other packages, alone: run beside every other package's race-detector tests, a
## 5-node cluster once took 10 s to form and clock-skew failed (BUG-17 in simulations/FINDINGS.md).
SIM_PKG := github.com/heureka/heureka/simulations
test: clientdeps testdeps javadeps vet
	@pkgs=$$($(GO) list $(PKGS)); \
	rest=$$(echo "$$pkgs" | grep -vx '$(SIM_PKG)'); \
	if [ -n "$$rest" ]; then $(GO) test -race -count=1 -timeout 15m $$rest || exit 1; fi; \
	if echo "$$pkgs" | grep -qx '$(SIM_PKG)'; then $(GO) test -race -count=1 -timeout 15m $(SIM_PKG) || exit 1; fi
	$(MAKE) upgrade-test

## upgrade-test: the previous release and this build in one cluster of real processes on
## loopback (3 and 5 nodes), rolled forward one node at a time and back under 30 renewing
## clients: no read answered 200 may miss a renewing instance or hold a cancelled one, and no
## renewal may answer 404. The previous release is built from this repository's history (the
## last commit whose wire.ProtocolVersion is this build's wire.MinProtocolVersion; a clone, not
## an archive), or taken from HK_UPGRADE_OLD_BIN. A second run, with a build that advertises
## only its newest protocol (sabotage), must be seen to split the cluster. About 4 minutes.
.PHONY: upgrade-test
upgrade-test:
	$(GO) test -tags upgrade -run '^TestUpgrade' -count=1 -timeout 20m -v ./cmd/heureka/

## spring-starter-measure: not part of `make test`. A three-node cluster on loopback and a Spring Boot
## service B calling A by name through the load balancer (B's Eureka client on one node, A's instances
## registered on another): registration → B's first call on the new instance and cancel → B's last
## call on it, for the stock defaults, fast polling (1 s fetch, 1 s cache TTL) and the Spring Cloud
## starter (docs/spring-starter.md). HEUREKA_MEASURE_ROUNDS (10), HEUREKA_MEASURE_STOCK_ROUNDS (3),
## HEUREKA_MEASURE_MODES (starter,fast,stock). About 8 minutes, most of them the stock rounds.
## HEUREKA_MEASURE_CASES (register,cancel) adds kill: an A instance's JVM killed with kill -9 → B's last
## call on it, failed calls included; A's lease HEUREKA_MEASURE_LEASE (90/30: duration/renewal, s);
## about 2 minutes a round at 90/30, 4 for stock.
.PHONY: spring-starter-measure
spring-starter-measure:
	HEUREKA_MEASURE=1 $(GO) test -run '^TestSpringStarterMeasure$$' -count=1 -v -timeout 70m ./clients/springstarter/ \
		| grep -E 'round [0-9]+:|calls/s|^ *(springstarter_test|maven)\.go:[0-9]+: \||FAIL|^ok'

test-short:
	$(GO) test -count=1 -short $(PKGS)

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags upgrade ./cmd/heureka/
	@# The msgpack methods are generated (wire/internal/msgpackgen): what is committed is what the generator writes.
	$(GO) generate ./... && git diff --exit-code -- wire/

fmt:
	gofmt -w $$(git ls-files '*.go')

lint: vet

## tidy: fails if go.mod/go.sum are not tidy.
tidy:
	$(GO) mod tidy
	git diff --exit-code go.mod go.sum

## bench: the benchmarks recorded in BENCHMARKS.md (not part of `make test`).
bench:
	@echo "load average at start: $$(cut -d' ' -f1-3 /proc/loadavg)" | tee $(BENCHOUT)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s -timeout 60m ./bench/ | tee -a $(BENCHOUT)
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./bench/cluster/ | tee -a $(BENCHOUT)
	@echo "load average at end: $$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a $(BENCHOUT)

## bench-report: the single-node tables of BENCHMARKS.md (throughput against the ceiling, cost vs
## size, deploy, reads under churn, register-to-readable, heap); BENCH_SIZES=1000,10000,100000,1000000
## adds 1M (about 8 GB of memory at its peak, about 12 minutes more; above 100k the heap is measured
## with the full JSON document warmed only). BENCH_ROUND is one side of one round: at 1M a 1.5 s
## round holds a transient of the heap or one collection, which moves a ratio by up to 0.1;
## BENCH_SIZES=1000000 BENCH_ROUND=5s measures 1M alone in about 17 minutes.
BENCH_SIZES ?= 1000,10000,100000
BENCH_ROUND ?= 1500ms
bench-report:
	$(GO) run ./bench/cmd/report -round $(BENCH_ROUND) -rounds 5 -samples 2000 -sizes $(BENCH_SIZES)

## bench-reference: the same workloads in one run against a heureka process and the reference
## Eureka server with its read-only response cache on (the Spring default) and off (builds the
## reference server's jar with javadeps when it is missing; about 6 minutes at 10k).
.PHONY: bench-reference bench-churn
bench-reference:
	@test -f clients/java/reference/target/reference-server.jar || $(MAKE) javadeps
	$(GO) run ./bench/cmd/report -target reference -sizes 10000 -round 1s -rounds 3 -warmup 5s

## bench-churn: every operation registers a new instance and cancels the oldest, 20k instances,
## 16 connections, for BENCH_CHURN (10m): RSS ≤ 1 GB and the pair rate within ±15% of the first minute.
## The goal is set at the issue's rate, BENCH_CHURN_RATE pairs/s (0: as fast as the connections go,
## which on a quiet 2-core machine is about 10,500 and, with the delta at its 128 MiB bound, holds
## about 350 MB live), under the soft memory limit the StatefulSet sets, BENCH_CHURN_MEMLIMIT (empty: none).
BENCH_CHURN ?= 10m
BENCH_CHURN_RATE ?= 4000
BENCH_CHURN_MEMLIMIT ?= 1000MiB
bench-churn:
	GOMEMLIMIT=$(BENCH_CHURN_MEMLIMIT) $(GO) run ./bench/cmd/report -sizes '' -churn $(BENCH_CHURN) -churn-size 20000 \
		-churn-conns 16 -churn-window 1m -churn-rate $(BENCH_CHURN_RATE)

## bench-watchers: push to applications (docs/push.md), not part of `make test`: one node (a child
## process) and 1k, 5k, 10k blocking-read and stream watchers on loopback: delivery latency of one
## change, memory per idle watcher, CPU per change, memory under churn of 10% every 10 s for 60 s;
## then the cost of 1,000 stock clients polling every second at 1k and 10k instances. About 10 minutes.
## The blocking watchers are plain HTTP/1.1 connections that ask again once every watcher has the
## change (BENCHMARKS.md, "Push to applications", says why). BENCH_WATCHERS_FLAGS replaces those
## flags (go run ./bench/cmd/watchers -h; empty: the bench's http.Client watchers).
BENCH_WATCHERS_FLAGS ?= -raw-blocking -next-after-change
.PHONY: bench-watchers
bench-watchers:
	$(GO) run ./bench/cmd/watchers $(BENCH_WATCHERS_FLAGS)

## fuzz: a short run of every fuzz target.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeInstanceJSON$$' -fuzztime 30s ./eureka/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeInstanceJSONFast$$' -fuzztime 30s ./eureka/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeInstanceXML$$' -fuzztime 30s ./eureka/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeReplicationList$$' -fuzztime 30s ./eureka/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 30s ./wire/

## sim: run the chaos simulations and write their report.
sim:
	$(GO) run ./simulations/cmd/heureka-sim

.PHONY: sabotage sabotage-seeds chaos chaos-seeds chaos-scale chaos-join

## sabotage: put every bug of internal/sabotage back, one switch at a time, run the scenarios
## simulations.SabotagePlan names for it, and fail unless a verdict catches every switch
## (table in simulations/SABOTAGE.md; about 6 minutes on two CPUs).
sabotage:
	@$(GO) run -tags sabotage ./simulations/cmd/heureka-sim -sabotage all -parallel 3 -out simulations/SABOTAGE.md; \
	rc=$$?; cat simulations/SABOTAGE.md; exit $$rc

## sabotage-seeds: the long partition (longer than the tombstone TTL) with each switch of the
## deletes-stay-deleted work on, and without any, over seeds 1..20: in how many seeds each switch
## is caught (simulations/SABOTAGE-SEEDS.md; about 15 minutes on two CPUs). `-sabotage all
## -seeds 20` runs the whole plan that way (about 45 minutes).
SABOTAGE_SEEDS_SWITCHES = tombstone-receipt-age,tombstones-dropped,copied-lease-fresh,stale-records-accepted,stale-renewals-forwarded
sabotage-seeds:
	@$(GO) run -tags sabotage ./simulations/cmd/heureka-sim -sabotage $(SABOTAGE_SEEDS_SWITCHES) \
		-scenario long-partition -seeds 20 -parallel 4 -out simulations/SABOTAGE-SEEDS.md; \
	rc=$$?; cat simulations/SABOTAGE-SEEDS.md; exit $$rc

## chaos: every in-process scenario over seeds 1..20 at its short duration and timers, four
## runs at a time, summarised in simulations/RESULTS.md (passes, figure distributions, a replay
## command per failing run; full reports of failing runs in simulations/failures/, not
## committed). About 20 minutes on two CPUs.
chaos:
	$(GO) run ./simulations/cmd/heureka-sim -seeds 20 -parallel 4 -short -scenario all \
		-failures simulations/failures -out simulations/RESULTS.md

## chaos-seeds: the same as chaos (kept for the old name).
chaos-seeds: chaos

## chaos-scale: replication messages per renewal and per registration at 5, 10, 20 and 50
## nodes in one process → simulations/WIRECOST.md (a few minutes).
chaos-scale:
	$(GO) run ./simulations/cmd/heureka-sim -wire-cost 5,10,20,50 -out simulations/WIRECOST.md

## chaos-join: a node joins a 3-node cluster holding 100k instances under churn
## → simulations/JOIN.md (too heavy for the 20-seed sweep; about 2 minutes).
chaos-join:
	$(GO) run ./simulations/cmd/heureka-sim -join-loaded 100000 -out simulations/JOIN.md

clean:
	rm -rf bin $(BENCHOUT)

.PHONY: chaos-netns chaos-netns-heavy-loss chaos-netns-datacenters

## chaos-netns-datacenters: federation of real heureka processes in network namespaces: 2 datacenters
## of 3 nodes following each other, then 3 in a ring, each its own gossip cluster following the others
## through --remote-region; p99 of a registration and a cancel crossing, echoes, and a WAN cut past the
## tombstone TTL and the drop time (stale, dropped, no resurrection after the heal)
## → simulations/netns/DATACENTERS.md (root; about 5 minutes; SKIPPED without root, like chaos-netns).
chaos-netns-datacenters:
	@HK_NETNS_COMMAND="$${HK_NETNS_COMMAND:-make chaos-netns-datacenters}" \
		$(MAKE) --no-print-directory chaos-netns NETNS_TARGET=chaos-netns-datacenters NETNS_TEST=TestNetnsDatacenters \
		NETNS_RESULTS=DATACENTERS.md

## chaos-netns-heavy-loss: the heavy-loss scenario of chaos-netns (20% of the packets dropped on
## every path, each way, for 20 s; no allowance for lost SYNs) five times in a row, seeds 1..5
## → simulations/netns/heavy-loss/seed<n>.md (root; about 6 minutes). Fails on the first failing run.
chaos-netns-heavy-loss:
	@mkdir -p simulations/netns/heavy-loss; \
	for s in 1 2 3 4 5; do \
		HK_NETNS_SEED=$$s HK_NETNS_SCENARIOS=heavy-loss HK_NETNS_OUT=$(CURDIR)/simulations/netns/heavy-loss/seed$$s.md \
			HK_NETNS_COMMAND="make chaos-netns-heavy-loss (seed $$s)" \
			$(MAKE) --no-print-directory chaos-netns || exit 1; \
	done

## chaos-netns: real heureka processes, one per Linux network namespace on a bridge, under link
## down, tc/BPF packet loss and partitions, SIGKILL and SIGSTOP, with Eureka clients in a namespace
## of their own, judged by the simulations' checkers → simulations/netns/RESULTS.md (root; about
## 4 minutes; charts in simulations/netns/charts/). Without root, ip, tc or ping it prints SKIPPED
## and exits 0. Every namespace and process of the run is removed at the end, also on failure or ^C
## (HK_NETNS_PANIC_AT=partition make chaos-netns fails a real run on purpose: "0 namespaces left").
## NETNS_TEST, NETNS_RESULTS and NETNS_TARGET select another test of the package (chaos-netns-datacenters).
NETNS_TARGET ?= chaos-netns
NETNS_TEST ?= TestNetns
NETNS_RESULTS ?= RESULTS.md
chaos-netns:
	@if [ "$$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1 \
		|| ! command -v ping >/dev/null 2>&1; then \
		echo "$(NETNS_TARGET): SKIPPED: needs root and the ip and tc (iproute2) and ping (iputils-ping) commands to create network namespaces"; \
		exit 0; \
	fi; \
	run=$${HK_NETNS_RUN:-$$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')}; \
	bindir=$$(mktemp -d); \
	sweep() { \
		for ns in $$(ip netns list | awk '{print $$1}' | grep "^hk-$$run-"); do \
			ip netns pids $$ns 2>/dev/null | xargs -r kill -9; ip netns del $$ns 2>/dev/null; \
		done; rm -rf "$$bindir"; \
	}; \
	trap 'sweep; exit 130' INT TERM HUP; \
	echo "$(NETNS_TARGET): run $$run: go build ./cmd/heureka"; \
	$(GO) build -o "$$bindir/heureka" ./cmd/heureka || { sweep; exit 1; }; \
	HK_NETNS_RUN=$$run HK_NETNS_BIN="$$bindir/heureka" HK_NETNS_COMMAND="$${HK_NETNS_COMMAND:-make $(NETNS_TARGET)}" \
		$(GO) test -tags netns -run '^$(NETNS_TEST)$$' -count=1 -v -timeout 20m ./simulations/netns/; \
	rc=$$?; sweep; \
	echo "$(NETNS_TARGET): run $$run: $$(ip netns list | grep -c "^hk-$$run-") namespaces left; results in simulations/netns/$(NETNS_RESULTS)"; \
	exit $$rc
