#!/usr/bin/env bash
# A minimal model-driven agent (kind: script): a loop around an OpenAI-compatible chat-completions API in
# terminus-2's JSON keystroke protocol. Each reply's commands run in the repository; their output is the
# next message. It writes its usage and an ATIF trajectory to the files the harness names, and on a model
# API failure (after three tries) the provider's answer to $KOTLIN_BENCH_OUTAGE (docs/configuration.md).
# Needs: KOTLIN_BENCH_MODEL_URL (agent `base_url:`), MY_API_KEY (agent `env: [MY_API_KEY]`).
exec python3 - <<'PY'
import json, os, subprocess, sys, time, urllib.error, urllib.request

url = os.environ["KOTLIN_BENCH_MODEL_URL"].rstrip("/") + "/chat/completions"
key = os.environ.get("MY_API_KEY", "")
model = os.environ.get("KOTLIN_BENCH_MODEL", "standin-coder")
instruction = open(os.environ["KOTLIN_BENCH_INSTRUCTION"], encoding="utf-8").read()
print(f"model-agent: {model} at {url}; API key {'set' if key else 'NOT set'}", flush=True)
messages = [{"role": "user", "content": "Answer in JSON: analysis, plan, commands "
             "[{keystrokes, duration}], task_complete.\n\nTask Description:\n" + instruction}]
usage = {"input_tokens": 0, "cache_tokens": 0, "output_tokens": 0, "model_calls": 0}
steps = [{"step_id": 1, "source": "user", "message": messages[0]["content"]}]

def write_reports():
    json.dump(usage, open(os.environ["KOTLIN_BENCH_USAGE"], "w"))
    trajectory = {"schema_version": "ATIF-v1.2", "session_id": os.environ["KOTLIN_BENCH_TASK"],
                  "agent": {"name": "model-agent", "version": "1", "model_name": model}, "steps": steps}
    json.dump(trajectory, open(os.environ["KOTLIN_BENCH_TRAJECTORY"], "w"), indent=1)

def chat():
    body = json.dumps({"model": model, "messages": messages}).encode()
    for attempt in range(3):
        request = urllib.request.Request(url, body, {"Content-Type": "application/json",
                                                     "Authorization": f"Bearer {key}"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:
            answer = f"HTTP {exc.code}: {exc.read().decode(errors='replace')[:300]}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            answer = f"no answer: {exc}"
        print(f"model-agent: try {attempt + 1}: {answer}", flush=True)
        time.sleep(1)
    open(os.environ["KOTLIN_BENCH_OUTAGE"], "w").write(answer)
    write_reports()
    sys.exit(75)

for turn in range(20):
    data = chat()
    reply = data["choices"][0]["message"]["content"]
    used = data.get("usage") or {}
    usage["input_tokens"] += used.get("prompt_tokens", 0)
    usage["output_tokens"] += used.get("completion_tokens", 0)
    usage["cache_tokens"] += (used.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    usage["model_calls"] += 1
    messages.append({"role": "assistant", "content": reply})
    answer = json.loads(reply[reply.find("{"): reply.rfind("}") + 1])
    calls, outputs = [], []
    for i, command in enumerate(answer.get("commands") or []):
        done = subprocess.run(["bash", "-c", command["keystrokes"]], capture_output=True, text=True, timeout=120)
        calls.append({"tool_call_id": f"call_{turn}_{i}", "function_name": "bash_command",
                      "arguments": {"keystrokes": command["keystrokes"]}})
        outputs.append({"source_call_id": f"call_{turn}_{i}", "content": done.stdout + done.stderr})
    steps.append({"step_id": len(steps) + 1, "source": "agent", "model_name": model,
                  "message": f"{answer.get('analysis', '')}\n{answer.get('plan', '')}", "tool_calls": calls,
                  "observation": {"results": outputs},
                  "metrics": {"prompt_tokens": used.get("prompt_tokens"), "completion_tokens": used.get("completion_tokens")}})
    if answer.get("task_complete"):
        break
    messages.append({"role": "user", "content": "New Terminal Output:\n" + "\n".join(o["content"] for o in outputs)})
write_reports()
print(f"model-agent: done after {usage['model_calls']} model call(s)", flush=True)
PY
