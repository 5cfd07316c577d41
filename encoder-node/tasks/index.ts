// The node's tasks, one file each, dispatched through one mapped table: a task kind without its
// handler does not compile.
import type { EncodeTask } from "../../actors/job/messages.js";
import { runChunkTask } from "./chunk.js";
import type { TaskContext, TaskEnd } from "../steps/context.js";
import { runEncode } from "./encode.js";
import { runProbe } from "./probe.js";

export type TaskHandler = (c: TaskContext, task: EncodeTask, signal: AbortSignal) => Promise<TaskEnd>;

export const TASKS: { readonly [K in EncodeTask["kind"]]: TaskHandler } = {
  probe: runProbe,
  encode: runEncode,
  chunk: runChunkTask,
};

/** Runs a leased task by its kind. Throws ReportError when the job could not be told its outcome. */
export const runTask = (c: TaskContext, task: EncodeTask, signal: AbortSignal): Promise<TaskEnd> => TASKS[task.kind](c, task, signal);
