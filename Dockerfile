# The acpc-lbr project image: the dealer, the LBR agent and the reference bots.
FROM python:3.11-slim
WORKDIR /app
# Everything the build reads: the metadata, setup.py (the mypyc step that compiles the
# protocol core and the dealer's hot path), the readme and the four packages
# (tests/deploy/test_dockerfile.py checks this list against pyproject.toml and setup.py).
COPY pyproject.toml setup.py README.md ./
COPY protocol ./protocol
COPY dealer ./dealer
COPY agents ./agents
COPY acpc_lbr ./acpc_lbr
# A C compiler for mypyc, only while installing (without it the build falls back to the
# pure sources: slower, and it says so). Every directory the container writes to, and
# every mount point of docker-compose.yml, is created here owned by acpc: a named volume
# mounted on a path the image lacks comes up owned by root, and the dealer (user acpc)
# could not write its logs there (tests/deploy/test_compose.py checks this).
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && pip install --no-cache-dir . \
    && apt-get purge -y --auto-remove gcc libc6-dev && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home acpc \
    && install -d -o acpc -g acpc /home/acpc/logs /home/acpc/.numba-cache
USER acpc
WORKDIR /home/acpc
# numba compiles on first use; its cache must be writable by acpc.
ENV NUMBA_CACHE_DIR=/home/acpc/.numba-cache
ENTRYPOINT ["acpc-lbr"]
CMD ["--help"]
