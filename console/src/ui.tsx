// The pieces every page uses: a Copy button that says when it is done, a secret shown once, and a
// labelled field that shows the server's error for it.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { Problem } from "./api.js";

/** Copies `text`; says "Copied" (or "Copy failed"); `what` completes its accessible name ("Copy the embed code"). */
export function CopyButton({ text, what, secondary = false }: { text: string; what?: string; secondary?: boolean }) {
  const [state, setState] = useState<"" | "Copied" | "Copy failed">("");
  return (
    <button
      type="button"
      class={secondary ? "secondary" : undefined}
      onClick={() =>
        void navigator.clipboard.writeText(text).then(
          () => setState("Copied"),
          () => setState("Copy failed"),
        )
      }
    >
      {state || "Copy"}
      {what && <span class="visually-hidden"> the {what}</span>}
    </button>
  );
}

/** A secret the API shows once (an API key, a signing secret): the lead says so, Copy takes it. */
export function SecretOnce({ secret, lead }: { secret: string; lead: string }) {
  return (
    <div class="secret" role="status">
      <p>{lead}</p>
      <code data-secret>{secret}</code> <CopyButton text={secret} />
    </div>
  );
}

/** A labelled input with the server's message for `field` (the first of several that has one) beside it. */
export function Field(props: {
  id: string;
  label: string;
  field: string | readonly string[];
  problem?: Problem;
  hint?: string;
  children: (a: Record<string, string | undefined>) => ComponentChildren;
}) {
  const error = (typeof props.field === "string" ? [props.field] : props.field).map((k) => props.problem?.fields[k]).find(Boolean);
  const errorId = `${props.id}-error`;
  const hintId = `${props.id}-hint`;
  return (
    <label for={props.id}>
      <span id={`${props.id}-label`}>{props.label}</span>
      {props.children({
        id: props.id,
        "aria-labelledby": `${props.id}-label`,
        "aria-invalid": error ? "true" : undefined,
        "aria-describedby": [error ? errorId : "", props.hint ? hintId : ""].filter(Boolean).join(" ") || undefined,
      })}
      {props.hint && (
        <span id={hintId} class="muted">
          {props.hint}
        </span>
      )}
      {error && (
        <span id={errorId} class="field-error">
          {error}
        </span>
      )}
    </label>
  );
}
