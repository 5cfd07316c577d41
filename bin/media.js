#!/usr/bin/env node
// Entry of the `media` CLI: TypeScript sources run through tsx's loader, no build step.
import { register } from "tsx/esm/api";

register();
await import("../main/cli.ts");
