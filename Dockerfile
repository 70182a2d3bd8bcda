# practiceflow as a container image: what docs/deploy.md's compose file builds (`build: .`).
#
# Python packages come from uv.lock only (`uv sync --locked`: the build fails when the lock
# and pyproject.toml disagree), the same versions `make` installs; the dev extras are left out.
# uv's version is the Makefile's UV_VERSION (tests/test_dockerfile.py checks both).
FROM python:3.11-slim AS build
ENV UV_PYTHON_DOWNLOADS=never UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1
RUN pip install --no-cache-dir uv==0.13.8
WORKDIR /app
# Dependencies first (a layer that changes only with the lock), then the project itself.
COPY pyproject.toml uv.lock ./
RUN uv sync --locked --no-dev --no-install-project --no-editable
COPY README.md CHANGELOG.md ./
COPY src ./src
COPY actions ./actions
COPY triggers ./triggers
COPY manifests ./manifests
RUN uv sync --locked --no-dev --no-editable

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 --user-group practiceflow
COPY --from=build /app/.venv /app/.venv
ENV PATH=/app/.venv/bin:$PATH PYTHONUNBUFFERED=1
USER practiceflow
WORKDIR /home/practiceflow
# The state store defaults to .practiceflow/state.db here; a fleet sets PRACTICEFLOW_STATE.
CMD ["practiceflow", "--help"]
