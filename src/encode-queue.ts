// The encode queue's priorities and worker classes, declared once: the queue's protocol
// (actors/scheduler/messages.ts) re-exports them, and the kernel's metrics label by them.

export const PRIORITIES = ["premium", "standard", "economy"] as const;
export type Priority = (typeof PRIORITIES)[number];

/** Worker classes, smallest first. */
export const WORKER_CLASSES = ["small", "standard", "large"] as const;
export type WorkerClass = (typeof WORKER_CLASSES)[number];
