"""List pages of Tekton runs for bench/stream.py, shaped like the PipelineRuns and TaskRuns of the Tekton Chains
samples the fake Kubernetes API serves (tests/servers/samples), grown to a Konflux build's size.

A PipelineRun is the sample's (spec params and pipelineRef, status conditions, results, embedded pipelineSpec,
childReferences, provenance) with the metadata the API server and Konflux add (labels, annotations, finalizers),
a failed condition, and one pipelineSpec task and child reference per task of a Konflux container build, each
task resolved from a bundle as Konflux does. A TaskRun is the TaskRun sample's (params, taskRef, podName,
steps with their termination, results, embedded taskSpec with scripts) with the same metadata. No field is
padding: the size comes from the number of tasks and steps, about 12 KB and 9 KB an item.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from hummingbird_agent.data_sources.konflux import BUILD_SHA_LABEL
from tests.servers import samples

# The tasks of a Konflux docker-build pipeline, in order (each runs after the one before).
TASKS = ("init", "clone-repository", "prefetch-dependencies", "build-container", "build-image-index", "source-build",
         "deprecated-base-image-check", "clair-scan", "ecosystem-cert-preflight-checks", "sast-snyk-check",
         "clamav-scan", "sbom-json-check", "apply-tags", "push-dockerfile", "rpms-signature-scan")
# Steps of the build TaskRun (a buildah build with its SBOM and upload steps).
STEPS = ("build", "push", "sbom-syft-generate", "analyse-dependencies-java-sbom", "merge-syft-sboms",
         "merge-cachi2-sbom", "create-purl-sbom", "create-base-images-sbom", "inject-sbom-and-push", "upload-sbom")
_LIST_KIND = {"pipelineruns": "PipelineRunList", "taskruns": "TaskRunList"}
_NAME, _UID = "RUN-NAME", "RUN-UID"
_BUNDLE = "quay.io/konflux-ci/tekton-catalog/task-{task}:0.2@sha256:" + "5c7e" * 16


def _metadata(kind: str, namespace: str, sha: str) -> dict[str, Any]:
    labels = {BUILD_SHA_LABEL: sha, "appstudio.openshift.io/application": "payments",
              "appstudio.openshift.io/component": "payments-api", "pipelines.appstudio.openshift.io/type": "build",
              "pipelinesascode.tekton.dev/event-type": "pull_request", "pipelinesascode.tekton.dev/repository":
              "payments-api", "tekton.dev/pipeline": "docker-build"}
    if kind == "taskruns":
        labels.update({"tekton.dev/pipelineRun": "build-" + _NAME, "tekton.dev/pipelineTask": "build-container",
                       "tekton.dev/task": "buildah"})
    url = "https://github.com/acme/payments-api"
    return {"name": _NAME, "namespace": namespace, "uid": _UID, "resourceVersion": "88412907", "generation": 1,
            "creationTimestamp": "2026-01-05T09:00:00Z", "labels": labels,
            "annotations": {"chains.tekton.dev/signed": "true", "build.appstudio.openshift.io/repo":
                            f"{url}?rev={sha}", "pipelinesascode.tekton.dev/sha-url": f"{url}/commit/{sha}",
                            "pipelinesascode.tekton.dev/log-url": f"https://console.example/ns/{namespace}/{_NAME}",
                            "pipelinesascode.tekton.dev/on-cel-expression":
                            'event == "pull_request" && target_branch == "main"',
                            "results.tekton.dev/record": f"{namespace}/results/{_UID}/records/{_UID}",
                            "results.tekton.dev/result": f"{namespace}/results/{_UID}"},
            "finalizers": ["chains.tekton.dev/" + kind[:-1]]}


def _bundle(task: str) -> dict[str, Any]:
    return {"resolver": "bundles", "params": [{"name": "name", "value": task},
                                              {"name": "bundle", "value": _BUNDLE.format(task=task)},
                                              {"name": "kind", "value": "task"}]}


def pipelinerun(namespace: str, sha: str) -> dict[str, Any]:
    run = (samples.load("tekton/tektoncd_chains_v1_pipelinerun-childrefs.json"))
    status = run["status"]
    status["conditions"][0].update(status="False", reason="Failed",
                                   message="Tasks Completed: 12 (Failed: 1, Cancelled 0), Skipped: 3")
    status["pipelineSpec"]["tasks"] = [
        {"name": task, "params": [{"name": "image-url", "value": "$(params.output-image)"},
                                  {"name": "revision", "value": "$(params.revision)"}],
         "runAfter": [TASKS[n - 1]] if n else [], "taskRef": _bundle(task),
         "workspaces": [{"name": "source", "workspace": "workspace"}]} for n, task in enumerate(TASKS)]
    for result in status["pipelineSpec"]["results"]:  # the sample's task names -> this pipeline's
        result["value"] = result["value"].replace("tasks.git-clone.", "tasks.clone-repository.").replace(
            "tasks.build.", "tasks.build-container.")
    status["childReferences"] = [{"apiVersion": "tekton.dev/v1", "kind": "TaskRun", "name": f"{_NAME}-{task}",
                                  "pipelineTaskName": task} for task in TASKS]
    run["spec"]["params"] += [{"name": "git-url", "value": "https://github.com/acme/payments-api"},
                              {"name": "revision", "value": sha}, {"name": "dockerfile", "value": "Containerfile"}]
    run["spec"]["pipelineRef"] = _bundle("docker-build")
    return {"apiVersion": "tekton.dev/v1", "kind": "PipelineRun", "metadata": _metadata("pipelineruns", namespace, sha),
            **run}


def taskrun(namespace: str, sha: str) -> dict[str, Any]:
    run = (samples.load("tekton/tektoncd_chains_v1_taskrun1.json"))
    status = run["status"]
    status["conditions"][0].update(status="False", reason="Failed",
                                   message='"step-build" exited with code 1: Error: building at STEP "RUN make"')
    status["steps"] = [{"name": step, "container": f"step-{step}", "imageID": "quay.io/konflux-ci/buildah-task@sha256:"
                        + "9a1d" * 16, "terminated": {"exitCode": int(n == 0), "reason": "Error" if n == 0 else
                        "Completed", "startedAt": "2026-01-05T09:01:10Z", "finishedAt": "2026-01-05T09:04:52Z"}}
                       for n, step in enumerate(STEPS)]
    status["taskSpec"]["steps"] = [{"name": step, "image": "quay.io/konflux-ci/buildah-task:latest",
                                    "env": [{"name": "IMAGE", "value": "$(params.IMAGE)"}],
                                    "script": f"#!/bin/bash\nset -euo pipefail\necho {step}\n"
                                              f"/usr/local/bin/{step} --image \"$IMAGE\" --workdir /var/workdir"}
                                   for step in STEPS]
    status["podName"] = f"{_NAME}-build-container-pod"
    run["spec"]["taskRef"] = _bundle("buildah")
    run["metadata"] = _metadata("taskruns", namespace, sha)
    return {"apiVersion": "tekton.dev/v1", "kind": "TaskRun", **run}


def item(kind: str, namespace: str, sha: str, n: int) -> str:
    return _template(kind, namespace, sha).replace(_NAME, f"run-{n}").replace(_UID, f"uid-{n:012d}")


def _template(kind: str, namespace: str, sha: str) -> str:
    return json.dumps((pipelinerun if kind == "pipelineruns" else taskrun)(namespace, sha), separators=(",", ":"))


def item_bytes(kind: str, namespace: str = "tenant", sha: str = "be7c" * 10) -> int:
    return len(item(kind, namespace, sha, 0).encode())


def page(kind: str, count: int, namespace: str = "tenant", sha: str = "be7c" * 10) -> Callable[[], Iterator[bytes]]:
    """A factory of one list page of `count` distinct runs, produced item by item so the server never holds
    the page (for the fake API's `generated` pages)."""
    template = _template(kind, namespace, sha)

    def parts() -> Iterator[bytes]:
        yield b'{"apiVersion":"tekton.dev/v1","kind":"%s","metadata":{"continue":""},"items":[' % (
            _LIST_KIND[kind].encode())
        for n in range(count):
            text = template.replace(_NAME, f"run-{n}").replace(_UID, f"uid-{n:012d}")
            yield (b"," if n else b"") + text.encode()
        yield b"]}"

    return parts
