package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"connectrpc.com/connect"

	mediav1 "media/clients/go/gen/media/v1"
)

// UploadState resumes an upload: keep it (e.g. as JSON) until UploadFile returns.
type UploadState struct {
	VideoID       string `json:"video_id"`
	UploadID      string `json:"upload_id"`
	Size          int64  `json:"size"`
	PartSizeBytes int64  `json:"part_size_bytes"`
}

// UploadOptions of UploadFile; all optional.
type UploadOptions struct {
	Title, Description, ContentType, AppID string
	PartSizeBytes                          int64                     // 5 MiB or more; default 16 MiB
	Resume                                 *UploadState              // an interrupted upload to finish
	OnState                                func(UploadState) error   // called before the first part: persist it
	OnProgress                             func(stored, total int64) // after each part
}

const minPart = 5 << 20

var contentTypes = map[string]string{".mp4": "video/mp4", ".mov": "video/quicktime", ".mkv": "video/x-matroska", ".webm": "video/webm", ".ts": "video/mp2t"}

// UploadFile uploads a file to hosting in parts (resuming o.Resume when given) and returns the
// video, now processing. A part is stored whole or not at all, so an interrupted upload resumes
// with the parts the service does not hold (ListUploadParts).
func (c *Client) UploadFile(ctx context.Context, path string, o UploadOptions) (*mediav1.Video, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() || info.Size() == 0 {
		return nil, fmt.Errorf("media: %s is not a non-empty file", path)
	}
	var state UploadState
	var todo []*mediav1.UploadPart
	if o.Resume != nil {
		state = *o.Resume
		if state.Size != info.Size() {
			return nil, fmt.Errorf("media: %s is %d bytes; the upload to resume was of %d: start a new one", path, info.Size(), state.Size)
		}
		listed, err := c.Videos.ListUploadParts(ctx, connect.NewRequest(&mediav1.ListUploadPartsRequest{Id: state.VideoID, UploadId: state.UploadID}))
		if err != nil {
			return nil, err
		}
		todo = listed.Msg.GetMissing()
	} else {
		ct := o.ContentType
		if ct == "" {
			ct = contentTypes[strings.ToLower(filepath.Ext(path))]
		}
		if ct == "" {
			ct = "video/mp4"
		}
		part := max(int64(minPart), o.PartSizeBytes)
		if o.PartSizeBytes == 0 {
			part = 16 << 20
		}
		created, err := c.Videos.CreateMultipartUpload(ctx, connect.NewRequest(&mediav1.CreateMultipartUploadRequest{
			AppId: o.AppID, Filename: filepath.Base(path), ContentType: ct, SizeBytes: info.Size(), PartSizeBytes: &part, Title: o.Title, Description: o.Description,
		}))
		if err != nil {
			return nil, err
		}
		state = UploadState{VideoID: created.Msg.GetVideo().GetId(), UploadID: created.Msg.GetUploadId(), Size: info.Size(), PartSizeBytes: created.Msg.GetPartSizeBytes()}
		todo = created.Msg.GetParts()
		if o.OnState != nil {
			if err := o.OnState(state); err != nil {
				return nil, err
			}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	parts := (state.Size + state.PartSizeBytes - 1) / state.PartSizeBytes
	stored := state.Size
	for _, p := range todo {
		stored -= partLength(state, p.GetPartNumber())
	}
	for _, p := range todo {
		n := int64(p.GetPartNumber())
		if n < 1 || n > parts {
			return nil, fmt.Errorf("media: the service asked for part %d of %d", n, parts)
		}
		buf := make([]byte, partLength(state, p.GetPartNumber()))
		if _, err := f.ReadAt(buf, (n-1)*state.PartSizeBytes); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if err := c.putPart(ctx, p, buf); err != nil {
			return nil, err
		}
		stored += int64(len(buf))
		if o.OnProgress != nil {
			o.OnProgress(stored, state.Size)
		}
	}
	listed, err := c.Videos.ListUploadParts(ctx, connect.NewRequest(&mediav1.ListUploadPartsRequest{Id: state.VideoID, UploadId: state.UploadID}))
	if err != nil {
		return nil, err
	}
	if len(listed.Msg.GetMissing()) > 0 {
		return nil, fmt.Errorf("media: %d parts of %s are not stored: resume the upload", len(listed.Msg.GetMissing()), state.VideoID)
	}
	done := &mediav1.CompleteUploadRequest{Id: state.VideoID, UploadId: state.UploadID}
	for _, s := range listed.Msg.GetStored() {
		done.Parts = append(done.Parts, &mediav1.CompletedUploadPart{PartNumber: s.GetPartNumber(), Etag: s.GetEtag()})
	}
	res, err := c.Videos.CompleteUpload(ctx, connect.NewRequest(done))
	if err != nil {
		return nil, err
	}
	return res.Msg.GetVideo(), nil
}

func partLength(s UploadState, n int32) int64 {
	return min(s.PartSizeBytes, s.Size-int64(n-1)*s.PartSizeBytes)
}

// putPart sends one part, 3 tries: sending a part again is safe.
func (c *Client) putPart(ctx context.Context, p *mediav1.UploadPart, body []byte) error {
	var last error
	for attempt := 1; attempt <= 3; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, p.GetUploadUrl(), bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.ContentLength = int64(len(body))
		res, err := c.http.Do(req)
		if err == nil {
			text, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			res.Body.Close()
			if res.StatusCode/100 == 2 {
				return nil
			}
			last = fmt.Errorf("HTTP %d %s", res.StatusCode, text)
			if res.StatusCode < 500 && res.StatusCode != 429 {
				return fmt.Errorf("media: part %d was refused: %w", p.GetPartNumber(), last)
			}
		} else {
			if ctx.Err() != nil {
				return err
			}
			last = err
		}
		time.Sleep(time.Duration(attempt) * 500 * time.Millisecond)
	}
	return fmt.Errorf("media: part %d failed 3 times (%v): resume the upload", p.GetPartNumber(), last)
}
