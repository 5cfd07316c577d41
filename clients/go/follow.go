package media

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"connectrpc.com/connect"

	mediav1 "media/clients/go/gen/media/v1"
)

func jobEnded(s mediav1.JobStatus) bool {
	switch s {
	case mediav1.JobStatus_JOB_STATUS_COMPLETED, mediav1.JobStatus_JOB_STATUS_FAILED, mediav1.JobStatus_JOB_STATUS_CANCELED, mediav1.JobStatus_JOB_STATUS_PARTIAL:
		return true
	}
	return false
}

// FollowJob follows a job with Watch until it ends (completed, failed, canceled or partial) and
// returns it; onUpdate (may be nil) sees every state with Watch's event type (snapshot, updated,
// then the terminal status name). A stream cut before the end is opened again, up to 3 times.
func (c *Client) FollowJob(ctx context.Context, id string, onUpdate func(job *mediav1.Job, eventType string)) (*mediav1.Job, error) {
	const procedure = "/media.v1.JobService/Watch"
	for left := 3; ; left-- {
		stream, err := c.Jobs.Watch(ctx, connect.NewRequest(&mediav1.WatchJobRequest{Id: id}))
		if err != nil {
			return nil, asAPIError(err, procedure)
		}
		for stream.Receive() {
			m := stream.Msg()
			if m.GetJob() == nil {
				continue
			}
			if onUpdate != nil {
				onUpdate(m.GetJob(), m.GetEventType())
			}
			if jobEnded(m.GetJob().GetStatus()) {
				stream.Close()
				return m.GetJob(), nil
			}
		}
		err = stream.Err()
		stream.Close()
		if left <= 0 || (err != nil && !retryable(err) && connect.CodeOf(err) != connect.CodeInternal) {
			if err == nil {
				return nil, fmt.Errorf("media: the Watch stream of %s ended before the job did", id)
			}
			return nil, asAPIError(err, procedure)
		}
	}
}

// VideoFailedError: the video ended in error (or was taken down) instead of playing.
type VideoFailedError struct{ Video *mediav1.Video }

func (e *VideoFailedError) Error() string {
	status := strings.ToLower(strings.TrimPrefix(e.Video.GetStatus().String(), "VIDEO_STATUS_"))
	return fmt.Sprintf("media: video %s is %s: %s %s", e.Video.GetId(), status, e.Video.GetErrorCode(), e.Video.GetErrorMessage())
}

// WaitUntilPlayable follows a video with Watch until it plays (status ready: its stream plays,
// perhaps still encoding the higher rungs) and returns it with its playback URL.
func (c *Client) WaitUntilPlayable(ctx context.Context, id string) (*mediav1.Video, error) {
	stream, err := c.Videos.Watch(ctx, connect.NewRequest(&mediav1.WatchVideoRequest{Id: id}))
	if err != nil {
		return nil, asAPIError(err, "/media.v1.VideoService/Watch")
	}
	defer stream.Close()
	for stream.Receive() {
		v := stream.Msg().GetVideo()
		switch v.GetStatus() {
		case mediav1.VideoStatus_VIDEO_STATUS_READY:
			return v, nil
		case mediav1.VideoStatus_VIDEO_STATUS_ERROR, mediav1.VideoStatus_VIDEO_STATUS_ARCHIVED, mediav1.VideoStatus_VIDEO_STATUS_DELETED:
			return nil, &VideoFailedError{Video: v}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, asAPIError(err, "/media.v1.VideoService/Watch")
	}
	return nil, fmt.Errorf("media: the Watch stream of %s ended before the video played", id)
}

// Paginate yields every item of a cursor-paged list: page is called with each cursor ("" first)
// and answers that page's items and its next_cursor ("" on the last page).
//
//	for key, err := range media.Paginate(ctx, func(ctx context.Context, cursor string) ([]*mediav1.ApiKey, string, error) {
//		res, err := c.APIKeys.List(ctx, connect.NewRequest(&mediav1.ListApiKeysRequest{Pagination: &mediav1.PaginationRequest{Limit: proto.Int32(100), Cursor: cursor}}))
//		if err != nil {
//			return nil, "", err
//		}
//		return res.Msg.GetApiKeys(), res.Msg.GetPagination().GetNextCursor(), nil
//	}) { ... }
func Paginate[T any](ctx context.Context, page func(ctx context.Context, cursor string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := ""
		for {
			items, next, err := page(ctx, cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range items {
				if !yield(item, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
	}
}

// AllVideos yields every video matching req (the video list pages with page_size and page_token).
func (c *Client) AllVideos(ctx context.Context, req *mediav1.ListVideosRequest) iter.Seq2[*mediav1.Video, error] {
	return Paginate(ctx, func(ctx context.Context, cursor string) ([]*mediav1.Video, string, error) {
		r := &mediav1.ListVideosRequest{PageSize: req.PageSize, PageToken: cursor, AppId: req.GetAppId(), Status: req.GetStatus(), Visibility: req.GetVisibility(), TitleQuery: req.GetTitleQuery(), Tag: req.GetTag()}
		res, err := c.Videos.List(ctx, connect.NewRequest(r))
		if err != nil {
			return nil, "", err
		}
		return res.Msg.GetVideos(), res.Msg.GetNextPageToken(), nil
	})
}
