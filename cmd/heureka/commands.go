package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// defaultAddr is the node the client commands ask when neither --addr nor
// HEUREKA_ADDR says otherwise: the local node on its default port.
const defaultAddr = "http://127.0.0.1:8761"

// newRootCmd returns the heureka command tree. The root command is serve,
// so that `heureka --http-addr :8761` starts a node as `heureka serve
// --http-addr :8761` does; they share one flag set.
func newRootCmd(getenv func(string) string, stdout, stderr io.Writer) *cobra.Command {
	fs := serveFlags()
	runServe := func(cmd *cobra.Command, args []string) error {
		if err := noArguments(args); err != nil {
			return usageError(err)
		}
		return serve(cmd.Context(), fs, getenv, stderr)
	}
	root := &cobra.Command{
		Use:           "heureka",
		Short:         "A Eureka-compatible service registry",
		Version:       version,
		SilenceErrors: true, // runContext prints them, once
		SilenceUsage:  true, // an error is not a reason to print the help
		Args:          rootArgs,
		RunE:          runServe,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("heureka {{.Version}}\n")
	root.CompletionOptions.DisableDefaultCmd = true
	root.SuggestionsMinimumDistance = 2
	root.Flags().AddFlagSet(fs)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(flagError(err)) })

	serveCmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Run a registry node (the default command)",
		Args:  cobra.ArbitraryArgs, // runServe explains what is wrong with them
		RunE:  runServe,
	}
	serveCmd.Flags().AddFlagSet(fs)

	// The serve help is Usage: every flag with its default and variable.
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if cmd == root || cmd == serveCmd {
			Usage(cmd.OutOrStdout())
			return
		}
		defaultHelp(cmd, args)
	})

	versionCmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "heureka %s\n", version)
		},
	}
	root.AddCommand(serveCmd, versionCmd)
	root.AddCommand(clientCommands(getenv)...)
	return root
}

// rootArgs rejects arguments of the root command (serve): an unknown command,
// with cobra's suggestions of the commands it resembles, or a boolean value
// given as a separate argument.
func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if _, err := parseBool(args[0]); err == nil {
		return usageError(noArguments(args))
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return usageError(errors.New(msg + "\n\nRun 'heureka help' for usage."))
}

// longFlagNames returns the names of every long flag of cmd and its
// subcommands, for goStyleFlags.
func longFlagNames(cmd *cobra.Command) map[string]bool {
	names := map[string]bool{"help": true, "version": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd)
	return names
}
