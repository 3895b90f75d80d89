// Package sdk is the contract a bundle author codes against.
//
// A bundle is a Go package under bundles/ that implements [Bundle]: a static,
// side-effect free [Bundle.Info] (ID, one-line summary, byte budget) and
// [Bundle.Provision], which receives an [Env] and returns the bundle's
// [Tool] values. A tool is a descriptor beside a handler, built with
// [NewTool] from two Go types: the input struct (its JSON schema becomes the
// tool's inputSchema) and the output struct (its outputSchema, sent only
// with --mcp-output-schemas).
//
// The host (package host) registers every compiled-in bundle through
// [Register], which checks every rule of the tool surface and returns all
// violations joined, each prefixed `sdk: bundle "x": tool "y": `.
//
// A bundle reaches the capture engine through [Env]: the host provides
// typed services (the engine's capture handle, for one) and a bundle asks
// for one by its Go type with [Service]; see docs/adding-a-bundle.md.
//
// The package imports the standard library and mcp-go's mcp wire types only.
package sdk
